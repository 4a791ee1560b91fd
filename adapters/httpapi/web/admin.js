// golem's operator page: the conversations from /v1/conversations, polled
// every 1.5 s, one page at a time; a conversation's detail with its live
// answer (/events), its approvals, Stop, New session and Diff; the usage
// of the last 30 days as an SVG bar chart; bot doctor's lines. Everything
// from the API is set as text, never parsed as HTML.
(() => {
  'use strict';

  const $ = (id) => document.getElementById(id);
  const authRequired = document.body.dataset.auth === 'required';
  const PAGE = 50;
  const POLL_MS = 1500;

  // The token is kept as the chat page keeps it, under the same name.
  const store = {
    get(k) { try { return localStorage.getItem(k); } catch (e) { return null; } },
    set(k, v) { try { localStorage.setItem(k, v); } catch (e) { /* private mode */ } },
  };
  const memory = {};
  const read = (k) => store.get(k) ?? memory[k] ?? null;
  const write = (k, v) => { memory[k] = v; store.set(k, v); };

  const tokenForm = $('token-form');
  const tokenInput = $('token');
  function askToken() {
    if (!tokenForm.hidden) return; // asked already: keep what is being typed
    tokenForm.hidden = false;
    tokenInput.value = '';
    tokenInput.focus();
  }
  tokenForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const t = tokenInput.value.trim();
    if (!t) return;
    write('golem.token', t);
    tokenForm.hidden = true;
    refresh();
  });
  if (authRequired) {
    $('change-token').hidden = false;
    $('change-token').addEventListener('click', askToken);
    if (!read('golem.token')) askToken();
  }

  function headers(json) {
    const h = {};
    if (json) h['Content-Type'] = 'application/json';
    const token = read('golem.token');
    if (token) h.Authorization = 'Bearer ' + token;
    return h;
  }

  function status(text) { $('status').textContent = text; }

  // api fetches a JSON answer; it throws with the server's error.
  async function api(path, method = 'GET', body) {
    const res = await fetch(path, { method, headers: headers(body !== undefined), body: body === undefined ? undefined : JSON.stringify(body) });
    if (res.status === 401) {
      askToken();
      throw new Error('golem needs its access token: enter it above.');
    }
    if (!res.ok) {
      let msg = 'HTTP ' + res.status;
      try { const j = await res.json(); if (j && j.error) msg += ': ' + j.error; } catch (e) { /* not JSON */ }
      throw new Error(msg);
    }
    return res.json();
  }

  const convPath = (key, rest = '') => '/v1/conversations/' + encodeURIComponent(key) + rest;

  function el(tag, cls, text) {
    const n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined && text !== null) n.textContent = text;
    return n;
  }

  function ago(iso) {
    const t = Date.parse(iso);
    if (!t || t < 0) return '—';
    const s = Math.max(0, Math.round((Date.now() - t) / 1000));
    if (s < 60) return s + ' s ago';
    if (s < 3600) return Math.round(s / 60) + ' min ago';
    if (s < 86400) return Math.round(s / 3600) + ' h ago';
    return Math.round(s / 86400) + ' days ago';
  }
  const dollars = (x) => '$' + (x || 0).toFixed(x >= 1 ? 2 : 4);
  function stateText(c) {
    let s = c.state;
    if (c.queued > 0) s += ' · ' + c.queued + ' waiting';
    return s;
  }

  // --- the list -------------------------------------------------------------

  const list = { cursors: [''], page: 0, next: null, busy: false, rendered: 0, turns: -1 };
  const tbody = $('conversations').querySelector('tbody');
  let selected = null;

  function query() {
    const p = new URLSearchParams({ limit: String(PAGE) });
    const st = $('filter-state').value;
    const pf = $('filter-platform').value;
    if (st) p.set('state', st);
    if (pf) p.set('platform', pf);
    const after = list.cursors[list.page];
    if (after) p.set('after', after);
    return '/v1/conversations?' + p.toString();
  }

  function row(c) {
    const tr = el('tr');
    tr.dataset.key = c.key;
    const name = el('td');
    name.append(el('div', 'key', c.key));
    const where = c.channel_name ? '#' + c.channel_name : c.platform + ' · ' + c.channel;
    name.append(el('div', 'sub', where));
    const state = el('td');
    state.append(el('span', 'badge ' + c.state, stateText(c)));
    state.className = 'state';
    const eng = el('td', 'wide', c.engine + (c.model ? ' · ' + c.model : ''));
    eng.append(el('div', 'sub', c.permissions + (c.isolation.branch ? ' · ' + c.isolation.branch : '')));
    const rep = el('td', 'wide', c.replica || '—');
    const last = el('td', 'last', ago(c.last_activity));
    const month = el('td', 'month', c.month.turns + ' turns');
    month.append(el('div', 'sub', dollars(c.month.cost_usd) + ' · ' + c.month.tokens + ' tok'));
    tr.append(name, state, eng, rep, last, month);
    if (c.key === selected) tr.classList.add('selected');
    tr.addEventListener('click', () => open(c.key));
    return tr;
  }

  async function refreshList() {
    if (list.busy) return;
    list.busy = true;
    try {
      const page = await api(query());
      const t0 = performance.now();
      tbody.replaceChildren(...page.conversations.map(row));
      list.rendered = performance.now() - t0;
      list.next = page.next;
      const turns = page.conversations.reduce((n, c) => n + c.month.turns, 0);
      if (turns !== list.turns) { list.turns = turns; refreshUsage(); }
      $('empty').hidden = page.conversations.length > 0;
      $('page-older').disabled = !page.next;
      $('page-newer').disabled = list.page === 0;
      status('');
    } catch (e) {
      status(e.message);
    } finally {
      list.busy = false;
    }
  }

  $('page-older').addEventListener('click', () => {
    if (!list.next) return;
    list.cursors[list.page + 1] = list.next;
    list.page++;
    refreshList();
  });
  $('page-newer').addEventListener('click', () => {
    if (list.page === 0) return;
    list.page--;
    refreshList();
  });
  for (const id of ['filter-state', 'filter-platform']) {
    $(id).addEventListener('change', () => { list.cursors = ['']; list.page = 0; refreshList(); });
  }
  $('filters').addEventListener('submit', (e) => e.preventDefault());

  // --- a conversation -------------------------------------------------------

  const live = $('live');
  let watching = null; // the key whose answer streams into #live
  let detailBusy = false;

  function open(key) {
    if (selected !== key) {
      selected = key;
      live.textContent = '';
      live.classList.remove('ended');
      $('diff').hidden = true;
      $('action-result').textContent = '';
      if (watching) watching.abort();
      watching = null;
    }
    for (const tr of tbody.querySelectorAll('tr')) tr.classList.toggle('selected', tr.dataset.key === key);
    $('detail').hidden = false;
    $('detail-key').textContent = key;
    refreshDetail();
  }
  $('detail-close').addEventListener('click', () => {
    selected = null;
    if (watching) watching.abort();
    watching = null;
    $('detail').hidden = true;
  });

  function fact(dl, name, value) {
    dl.append(el('dt', null, name), el('dd', null, value));
  }

  async function refreshDetail() {
    if (!selected || detailBusy) return;
    detailBusy = true;
    const key = selected;
    try {
      const d = await api(convPath(key));
      if (key !== selected) return;
      const dl = $('detail-facts');
      dl.replaceChildren();
      fact(dl, 'State', stateText(d) + (d.started ? ' since ' + ago(d.started) : ''));
      fact(dl, 'Where', d.channel_name ? d.platform + ' · #' + d.channel_name : d.platform + ' · ' + (d.workspace ? d.workspace + ' · ' : '') + d.channel);
      fact(dl, 'Engine', d.engine + (d.model ? ' · ' + d.model : ' · default model'));
      fact(dl, 'Permissions', d.permissions);
      let iso = d.isolation.mode;
      if (d.worktree) iso += ' · ' + d.worktree.branch + (d.worktree.dirty ? ' · uncommitted changes' : ' · clean');
      fact(dl, 'Isolation', iso);
      if (d.replica) fact(dl, 'Replica', d.replica);
      fact(dl, 'This month', d.month.turns + ' turns · ' + d.month.tokens + ' tokens · ' + dollars(d.month.cost_usd));
      $('conv-stop').disabled = d.state === 'idle';
      renderPending(key, d.pending);
      renderTurns(d.turns);
      const audit = $('audit');
      audit.replaceChildren(...d.audit.slice().reverse().map((a) => el('li', null,
        new Date(a.at).toLocaleString() + ' · ' + a.by + ' · ' + a.action + (a.result ? ' — ' + a.result : ''))));
      if (!d.audit.length) audit.append(el('li', 'sub', 'none yet'));
      const scheds = $('schedules');
      scheds.replaceChildren(...d.schedules.map((sc) => el('li', null,
        (sc.name || sc.id) + ' · ' + (sc.spec || ('once at ' + new Date(sc.at).toLocaleString())) + (sc.tz ? ' ' + sc.tz : '') +
        ' · set by ' + sc.user + (sc.paused ? ' · paused' : '') +
        (sc.last_run ? ' · last run ' + ago(sc.last_run) + ' (' + sc.last_outcome + ')' : '') +
        (sc.failures ? ' · ' + sc.failures + ' failures in a row' : ''))));
      if (!d.schedules.length) scheds.append(el('li', 'sub', 'none'));
      if (d.state !== 'idle' && watching === null) watch(key);
    } catch (e) {
      $('action-result').textContent = e.message;
    } finally {
      detailBusy = false;
    }
  }

  function renderPending(key, pending) {
    const box = $('pending');
    const have = new Set(pending.map((p) => p.id));
    for (const n of Array.from(box.children)) if (!have.has(n.dataset.id)) n.remove();
    for (const p of pending) {
      if (box.querySelector('[data-id="' + CSS.escape(p.id) + '"]')) continue;
      const r = el('div', 'request');
      r.dataset.id = p.id;
      r.append(el('div', null, '🔐 ' + p.tool + ' asked by ' + p.asked_by + ', ' + ago(p.asked) + ' (' + p.id + ')'));
      const choices = el('div', 'choices');
      const decide = (decision, option) => async () => {
        for (const b of choices.querySelectorAll('button')) b.disabled = true;
        const body = { conversation: key, id: p.id, decision };
        if (option !== undefined) body.option = option;
        try {
          await api('/v1/permissions', 'POST', body);
          r.replaceChildren(el('div', null, (decision === 'deny' ? '❌ Denied: ' : '✅ Allowed: ') + p.tool));
        } catch (e) {
          r.append(el('div', 'error', e.message));
        }
      };
      if (!p.here) { // decided there: the API forwards the answer
        choices.append(el('span', 'sub', 'asked on replica ' + (p.replica || 'elsewhere') + ' '));
      }
      if (p.options && p.options.length) {
        p.options.forEach((label, i) => {
          const b = el('button', null, label);
          b.type = 'button';
          b.dataset.decision = 'allow';
          b.addEventListener('click', decide('allow', i));
          choices.append(b);
        });
        const b = el('button', 'danger', 'Deny');
        b.type = 'button';
        b.dataset.decision = 'deny';
        b.addEventListener('click', decide('deny'));
        choices.append(b);
      } else {
        for (const [label, decision, cls] of [['Allow', 'allow', ''], ['Allow for this session', 'allow_session', ''], ['Deny', 'deny', 'danger']]) {
          const b = el('button', cls, label);
          b.type = 'button';
          b.dataset.decision = decision;
          b.addEventListener('click', decide(decision));
          choices.append(b);
        }
      }
      r.append(choices);
      box.append(r);
    }
  }

  function renderTurns(turns) {
    const body = $('turns').querySelector('tbody');
    body.replaceChildren(...turns.map((t) => {
      const tr = el('tr');
      tr.append(el('td', null, ago(t.started)), el('td', null, t.by), el('td', null, t.outcome),
        el('td', null, (t.duration_ms / 1000).toFixed(1) + ' s'), el('td', null, t.cost_usd ? dollars(t.cost_usd) : '—'));
      return tr;
    }));
  }

  // watch streams key's running answer into #live: the text so far, then
  // what comes, until its terminal event.
  async function watch(key) {
    const ctl = new AbortController();
    watching = ctl;
    let ended = false;
    try {
      const res = await fetch(convPath(key, '/events'), { headers: headers(false), signal: ctl.signal });
      if (res.status === 204 || !res.ok) return;
      live.textContent = '';
      live.classList.remove('ended');
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buf = '';
      for (;;) {
        const chunk = await reader.read();
        if (chunk.done) break;
        buf += decoder.decode(chunk.value, { stream: true });
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const frame = buf.slice(0, i);
          buf = buf.slice(i + 2);
          if (!frame.startsWith('data: ')) continue;
          let ev;
          try { ev = JSON.parse(frame.slice(6)); } catch (e) { continue; }
          if (ev.type === 'text') live.append(document.createTextNode(ev.content));
          else if (ev.type === 'tool_call') live.append(document.createTextNode('\n🔧 ' + ev.name + '\n'));
          else if (ev.type === 'done' || ev.type === 'error') {
            ended = true;
            const why = ev.type === 'done' ? 'done' : (ev.reason && ev.reason !== ev.message ? ev.reason + ': ' + ev.message : ev.message || ev.reason || 'error');
            live.append(document.createTextNode('\n— ' + why));
            live.classList.add('ended');
          }
          live.scrollTop = live.scrollHeight;
        }
      }
    } catch (e) {
      /* aborted, or the connection closed: the next poll joins again */
    } finally {
      if (watching === ctl) watching = null;
    }
  }

  async function act(path, method = 'POST') {
    const out = $('action-result');
    try {
      const r = await api(convPath(selected, path), method);
      return r.text;
    } catch (e) {
      out.textContent = e.message;
      return null;
    }
  }
  $('conv-stop').addEventListener('click', async () => {
    const t = await act('/stop');
    if (t !== null) $('action-result').textContent = t;
    refreshDetail();
  });
  $('conv-new').addEventListener('click', async () => {
    const t = await act('/new');
    if (t !== null) $('action-result').textContent = t;
    refreshDetail();
  });
  $('conv-diff').addEventListener('click', async () => {
    const t = await act('/diff', 'GET');
    if (t === null) return;
    const d = $('diff');
    d.textContent = t;
    d.hidden = false;
  });

  // --- usage and doctor -----------------------------------------------------

  const SVG = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs) {
    const n = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, String(v));
    return n;
  }

  async function refreshUsage() {
    let days;
    try { days = (await api('/v1/usage/daily')).days; } catch (e) { return; }
    const byCost = days.some((d) => d.cost_usd > 0);
    const value = (d) => (byCost ? d.cost_usd : d.turns);
    const top = Math.max(...days.map(value), 0);
    const W = 600, H = 110, base = 110, bw = W / days.length;
    const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', preserveAspectRatio: 'none' });
    const total = days.reduce((s, d) => s + value(d), 0);
    chart.append(svg('title'));
    chart.firstChild.textContent = 'Usage per day: ' + (byCost ? dollars(total) : total + ' turns') + ' in 30 days';
    days.forEach((d, i) => {
      const h = top > 0 ? Math.max(value(d) > 0 ? 2 : 0, (value(d) / top) * (base - 10)) : 0;
      const r = svg('rect', { x: i * bw + 1, y: base - Math.max(h, 1), width: Math.max(bw - 2, 1), height: Math.max(h, 1), class: value(d) > 0 ? 'bar' : 'bar zero' });
      r.dataset.day = d.day;
      const tip = svg('title');
      tip.textContent = d.day + ': ' + d.turns + ' turns, ' + d.tokens + ' tokens, ' + dollars(d.cost_usd);
      r.append(tip);
      chart.append(r);
    });
    const legend = el('div', 'legend');
    legend.append(el('span', null, days[0].day), el('span', 'peak', 'max ' + (byCost ? dollars(top) : top + ' turns') + ' a day · ' +
      (byCost ? dollars(total) : total + ' turns') + ' in all'), el('span', null, days[days.length - 1].day));
    $('usage-chart').replaceChildren(chart, legend);
  }

  $('doctor-run').addEventListener('click', async () => {
    const ul = $('doctor');
    const btn = $('doctor-run');
    btn.disabled = true;
    ul.replaceChildren(el('li', 'sub', 'running the checks…'));
    try {
      const r = await api('/v1/doctor');
      ul.replaceChildren(...r.lines.map((l) => {
        const li = el('li', l.verdict);
        li.append(el('span', 'v', l.verdict), document.createTextNode(l.name + ' — ' + l.text));
        return li;
      }));
    } catch (e) {
      ul.replaceChildren(el('li', 'error', e.message));
    } finally {
      btn.disabled = false;
    }
  });

  function refresh() {
    refreshList();
    refreshDetail();
  }
  refresh();
  setInterval(refresh, POLL_MS);
  setInterval(refreshUsage, 60000);
  window.golemAdmin = { renderMs: () => list.rendered, open };
})();
