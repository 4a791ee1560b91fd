// golem's web chat: posts to /v1/chat and renders the Server-Sent Events of
// the answer as they arrive. The agent's text is only ever set as text
// (textContent / text nodes), never parsed as HTML.
(() => {
  'use strict';

  const $ = (id) => document.getElementById(id);
  const log = $('log');
  const composer = $('composer');
  const prompt = $('prompt');
  const stopBtn = $('stop');
  const convEl = $('conversation');
  const tokenForm = $('token-form');
  const tokenInput = $('token');
  const authRequired = document.body.dataset.auth === 'required';

  const store = {
    get(k) { try { return localStorage.getItem(k); } catch (e) { return null; } },
    set(k, v) { try { localStorage.setItem(k, v); } catch (e) { /* private mode: keep in memory only */ } },
  };
  const memory = {};
  const read = (k) => store.get(k) ?? memory[k] ?? null;
  const write = (k, v) => { memory[k] = v; store.set(k, v); };

  function newConversationId() {
    const b = new Uint8Array(8);
    crypto.getRandomValues(b);
    return 'web-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  }

  let conversation = read('golem.conversation');
  if (!conversation) {
    conversation = newConversationId();
    write('golem.conversation', conversation);
  }
  convEl.textContent = conversation;

  // --- token ---------------------------------------------------------------

  function askToken() {
    tokenForm.hidden = false;
    tokenInput.value = '';
    tokenInput.focus();
  }
  tokenForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const t = tokenInput.value.trim();
    if (!t) return;
    write('golem.token', t);
    tokenInput.value = '';
    tokenForm.hidden = true;
    prompt.focus();
  });
  if (authRequired) {
    $('change-token').hidden = false;
    $('change-token').addEventListener('click', askToken);
    if (!read('golem.token')) askToken();
  }

  $('new-conversation').addEventListener('click', () => {
    conversation = newConversationId();
    write('golem.conversation', conversation);
    convEl.textContent = conversation;
    log.replaceChildren();
    prompt.focus();
  });

  // --- rendering -----------------------------------------------------------

  function el(tag, cls, text) {
    const n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined) n.textContent = text;
    return n;
  }

  function nearBottom() {
    const s = document.scrollingElement;
    return s.scrollHeight - s.scrollTop - s.clientHeight < 80;
  }
  function keepBottom(wasNear) {
    if (wasNear) document.scrollingElement.scrollTop = document.scrollingElement.scrollHeight;
  }

  const SUMMARY_KEYS = ['command', 'file_path', 'path', 'pattern', 'url', 'query', 'description', 'prompt'];
  function short(s) {
    s = String(s).replace(/\s+/g, ' ').trim();
    return s.length > 100 ? s.slice(0, 99) + '…' : s;
  }
  function toolSummary(args) {
    if (!args || typeof args !== 'object') return '';
    for (const k of SUMMARY_KEYS) {
      if (typeof args[k] === 'string' && args[k].trim()) return short(args[k]);
    }
    for (const v of Object.values(args)) {
      if (typeof v === 'string' && v.trim()) return short(v);
    }
    return '';
  }

  // download fetches a file the agent handed back (with the token, which a
  // plain link would not send) and saves it under its name.
  async function download(url, name) {
    const headers = {};
    const token = read('golem.token');
    if (token) headers.Authorization = 'Bearer ' + token;
    const res = await fetch(url, { headers });
    if (!res.ok) { alert('The file could not be fetched: ' + res.status); return; }
    const a = el('a');
    a.href = URL.createObjectURL(await res.blob());
    a.download = name;
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  }

  // decisionText is what a decided permission request says.
  const decisionText = { allow: '✅ Allowed.', allow_session: '✅ Allowed for this session.', deny: '❌ Denied.' };

  // settle replaces a permission request's buttons by its decision.
  function settle(box, decision) {
    box.querySelector('.choices')?.remove();
    if (!box.querySelector('.decision')) box.append(el('div', 'decision', decisionText[decision] || decision));
  }

  // permissionView shows what the agent asks to do, with one button per
  // answer; a click posts the decision to /v1/permissions.
  function permissionView(ev) {
    const box = el('div', 'permission');
    box.dataset.id = ev.id || '';
    const args = ev.args || {};
    let choices = [['Allow', 'allow'], ['Allow for this session', 'allow_session'], ['Deny', 'deny']];
    if (ev.tool === 'ExitPlanMode') {
      box.append(el('div', 'ask', '📝 The agent proposes this plan:'), el('pre', 'detail', String(args.plan ?? '')));
      choices = [['Approve', 'allow'], ['Keep planning', 'deny']];
    } else if (ev.tool === 'AskUserQuestion' && ev.questions && ev.questions.length) {
      const q = ev.questions[0];
      box.append(el('div', 'ask', '❓ ' + (q.question ?? '')));
      choices = (q.options || []).map((o, i) => [o.label ?? String(i + 1), 'allow', i]).concat([['Skip', 'deny']]);
    } else {
      const what = args.command ?? args.file_path ?? '';
      box.append(el('div', 'ask', '🔐 The agent wants to use ' + (ev.tool || 'a tool') + (what ? ':' : '')));
      if (what) box.append(el('pre', 'detail', String(what)));
    }
    const row = el('div', 'choices');
    for (const [label, decision, option] of choices) {
      const b = el('button', decision === 'deny' ? 'deny' : '', label);
      b.type = 'button';
      b.addEventListener('click', () => decide(box, ev.id, decision, option));
      row.append(b);
    }
    box.append(row);
    return box;
  }

  async function decide(box, id, decision, option) {
    const headers = { 'Content-Type': 'application/json' };
    const token = read('golem.token');
    if (token) headers.Authorization = 'Bearer ' + token;
    const body = { conversation, id, decision };
    if (option !== undefined) body.option = option;
    box.querySelectorAll('.choices button').forEach((b) => { b.disabled = true; });
    let res;
    try {
      res = await fetch('/v1/permissions', { method: 'POST', headers, body: JSON.stringify(body) });
    } catch (e) {
      res = null;
    }
    if (res && res.ok) {
      settle(box, decision);
    } else if (res && (res.status === 404 || res.status === 409)) {
      box.querySelector('.choices')?.remove();
      box.append(el('div', 'decision', 'This was already answered.'));
    } else {
      box.querySelectorAll('.choices button').forEach((b) => { b.disabled = false; });
    }
  }

  function seconds(ms) { return (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + ' s'; }

  // A turn's view: the prompt, then the answer's text and tool lines in the
  // order the events come.
  function turnView(text) {
    $('hint')?.remove();
    const turn = el('section', 'turn');
    turn.append(el('div', 'you', text));
    const answer = el('div', 'answer');
    answer.append(el('div', 'pending', '…'));
    turn.append(answer);
    log.append(turn);
    keepBottom(true);

    let textEl = null;
    let ended = false;
    const add = (node) => {
      answer.querySelector('.pending')?.remove();
      answer.append(node);
    };
    return {
      get ended() { return ended; },
      event(ev) {
        const near = nearBottom();
        switch (ev.type) {
          case 'text':
            if (!textEl) { textEl = el('div', 'text'); add(textEl); }
            textEl.append(document.createTextNode(ev.content ?? ''));
            break;
          case 'tool_call': {
            textEl = null;
            const summary = toolSummary(ev.args);
            add(el('div', 'tool', '🔧 ' + (ev.name || 'tool') + (summary ? ' — ' + summary : '')));
            break;
          }
          case 'tool_result':
            if (ev.is_error) {
              textEl = null;
              add(el('div', 'tool failed', '✗ ' + short(ev.content || 'the tool failed')));
            }
            break;
          case 'file': {
            textEl = null;
            const link = el('a', 'file', '📎 ' + (ev.name || 'file') + ' (' + ev.size + ' bytes)');
            link.href = ev.url;
            link.download = ev.name || 'file';
            link.addEventListener('click', (e) => { e.preventDefault(); download(ev.url, link.download); });
            add(link);
            break;
          }
          case 'warning':
            textEl = null;
            add(el('div', 'warning', '⚠ ' + (ev.message ?? '')));
            break;
          case 'permission_request':
            textEl = null;
            add(permissionView(ev));
            break;
          case 'permission_decision': {
            const box = answer.querySelector('.permission[data-id="' + CSS.escape(ev.id || '') + '"]');
            if (box) settle(box, ev.decision);
            break;
          }
          case 'done': {
            ended = true;
            answer.querySelector('.pending')?.remove();
            const parts = [];
            if (ev.duration_ms !== undefined) parts.push(seconds(ev.duration_ms));
            if (ev.num_turns !== undefined) parts.push(ev.num_turns + (ev.num_turns === 1 ? ' turn' : ' turns'));
            if (ev.cost_usd !== undefined) parts.push('$' + ev.cost_usd.toFixed(4));
            if (parts.length) add(el('div', 'meta', 'done · ' + parts.join(' · ')));
            else if (!answer.children.length) add(el('div', 'meta', 'done (no text)'));
            break;
          }
          case 'error':
            ended = true;
            if (ev.reason === 'stopped') {
              textEl = null;
              add(el('div', 'notice', '⏹ Stopped.'));
            } else {
              this.error(ev.message ?? 'error');
            }
            break;
        }
        keepBottom(near);
      },
      error(message) {
        ended = true;
        textEl = null;
        const box = el('div', 'error');
        box.setAttribute('role', 'alert');
        box.append(el('strong', '', 'Error: '), document.createTextNode(message));
        add(box);
        keepBottom(true);
      },
    };
  }

  // --- the API -------------------------------------------------------------

  let streams = 0;
  function streaming(delta) {
    streams += delta;
    stopBtn.disabled = streams === 0;
    document.body.classList.toggle('busy', streams > 0);
  }

  // parseSSE feeds complete "data:" payloads of buf to onData and returns
  // what is left (an incomplete frame).
  function parseSSE(buf, onData) {
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = frame.split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, ''))
        .join('\n');
      if (data) onData(data);
    }
    return buf;
  }

  async function chat(text) {
    const view = turnView(text);
    const headers = { 'Content-Type': 'application/json' };
    const token = read('golem.token');
    if (token) headers.Authorization = 'Bearer ' + token;
    streaming(+1);
    try {
      let res;
      try {
        res = await fetch('/v1/chat', { method: 'POST', headers, body: JSON.stringify({ conversation, text }) });
      } catch (e) {
        view.error('cannot reach golem (' + e.message + ')');
        return;
      }
      if (res.status === 401) {
        view.error('golem needs its access token: enter it above, then send again.');
        if (!prompt.value) prompt.value = text;
        askToken();
        return;
      }
      if (!res.ok) {
        let msg = 'HTTP ' + res.status;
        try { const j = await res.json(); if (j && j.error) msg += ': ' + j.error; } catch (e) { /* not JSON */ }
        view.error(msg);
        return;
      }
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buf = '';
      for (;;) {
        let chunk;
        try {
          chunk = await reader.read();
        } catch (e) {
          break;
        }
        if (chunk.done) break;
        buf = parseSSE(buf + decoder.decode(chunk.value, { stream: true }), (data) => {
          let ev;
          try { ev = JSON.parse(data); } catch (e) { return; }
          view.event(ev);
        });
      }
      if (!view.ended) view.error('the connection closed before the answer ended');
    } finally {
      streaming(-1);
    }
  }

  composer.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = prompt.value.trim();
    if (!text) return;
    if (authRequired && !read('golem.token')) { askToken(); return; }
    prompt.value = '';
    chat(text);
  });
  prompt.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      composer.requestSubmit();
    }
  });
  stopBtn.addEventListener('click', () => chat('/stop'));
})();
