package core

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/sandbox"
	"github.com/golem-chat/golem/store"
)

// settings are what one turn runs with, after the conversation's stored
// choices, the channel's override and the defaults.
type settings struct {
	engine, model, workdir string
	mode                   engine.Mode
	sandbox                sandbox.Config // the channel's override of the sandbox
}

func (d *Dispatcher) settings(m Message, conv store.Conversation) settings {
	o := d.opts.Channels[m.Platform+":"+m.Channel]
	s := settings{engine: firstNonEmpty(conv.Engine, o.Engine, d.opts.DefaultEngine)}
	s.model = firstNonEmpty(conv.Model, o.Model, d.opts.Models[s.engine])
	s.workdir = firstNonEmpty(o.Workdir, d.opts.Workspace)
	s.mode = engine.Mode(firstNonEmpty(string(o.Permissions), string(d.opts.Permissions.Mode)))
	s.sandbox = o.Sandbox
	return s
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// runTurn runs one message through the agent and streams the answer. ctx
// is cancelled by /stop and by shutdown; the timeout is added here.
// release gives back the turn's slot of the global limit: it is called
// once the agent has exited (or never started), while the answer may still
// be on its way. prev, when not nil, is closed once the conversation's
// previous agent has exited: this turn prepares meanwhile and waits for it
// only to start its own (the session's files are written last).
//
// runTurn returns once the answer is delivered and the session and the
// usage saved; what it returns forgets the turn's record in flight, which
// needs no slot either. exiting is nil when the agent is gone too, else it
// is closed when it is: the turn steered nothing into it, so nothing is
// left to learn from its exit, and the conversation's next turn may
// prepare while it exits; the turn's context must outlive it (a cancelled
// context kills the agent).
func (d *Dispatcher) runTurn(ctx context.Context, c *conversation, m Message, gen int, release func(), prev <-chan struct{}) (forget func(), exiting <-chan struct{}) {
	nothing := func() {}
	key := c.key
	log := d.log.With("conversation", key, "platform", m.Platform)
	conv, err := d.opts.Store.Conversation(key)
	if err != nil {
		log.Error("read conversation", "err", err)
		<-d.answer(m, "⚠️ **Error:** golem could not read its session store; see the bot's log.", true)
		d.takenLate(key, m)
		return nothing, nil
	}
	set := d.settings(m, conv)
	c.mu.Lock()
	if c.running != nil {
		c.running.engine = set.engine
	}
	c.mu.Unlock()
	eng := d.opts.Engines[set.engine]
	if eng == nil {
		<-d.answer(m, "⚠️ **Error:** engine "+set.engine+" is not configured", true)
		d.takenLate(key, m)
		return nothing, nil
	}

	out := d.tapped(c, d.output(m, key, log))
	if head := m.promptEvents(); head != nil {
		out.add(head...)
	}
	// The chat context is read while the working directory is prepared,
	// after the answer has started to show.
	said := d.startHistory(ctx, m)
	ws, err := d.opts.Workdirs.Open(ctx, set.workdir, key.String())
	if err != nil {
		log.Error("open working directory", "workdir", set.workdir, "err", err)
		end := parser.Event{Type: parser.Error, Reason: parser.Failed,
			Message: "golem could not prepare this conversation's working directory: " + err.Error()}
		d.measure(m, set.engine, end, nil, time.Time{})
		out.finish(end, d.notice(ctx, end), handback{})
		return out.close, nil
	}

	prompt := m.Text
	files := make([]string, 0, len(m.Attachments))
	for _, a := range moveInto(ws.Dir, m.Attachments, log) {
		files = append(files, a.Path)
	}
	if prompt == "" {
		prompt = "Look at the attached files."
	}
	prompt = withContext(withViewing(prompt, m.Viewing), said(), d.opts.Context)

	box := openOutbox(ws.Dir)
	shared := d.useOutbox(box.dir, key)
	turnCtx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	cancelAt := cancel // at the return, or once the agent is gone (see exiting)
	defer func() { cancelAt() }()
	if prev != nil { // the previous agent writes its session as it exits
		select {
		case <-prev:
		case <-turnCtx.Done(): // no agent is started: the turn ends stopped
		}
	}
	session := conv.SessionID
	fresh := m.prompt != nil && m.prompt.fresh // the conversation's own session stays as it is
	if fresh {
		session = ""
	}
	start := time.Now()
	var steered []Message // written into the run while it ran
	terminal := parser.Event{Type: parser.Error, Message: "the agent did not answer", Reason: parser.Crashed}
	var run *engine.Run
	err = turnCtx.Err() // stopped or out of time already (while it waited for the last agent)
	if err == nil {
		run, err = eng.Run(turnCtx, engine.Turn{
			Prompt: prompt, SessionID: session, Model: set.model, Workdir: ws.Dir, Files: files,
			OnStart: out.started, Mode: set.mode,
			Sandbox: d.opts.Sandbox.Turn(set.sandbox, sandbox.Place{Workdir: ws.Dir, Tree: ws.Tree, Repo: ws.Repo, Branch: ws.Branch, Files: files}),
		})
	}
	startErr := err
	var firstText time.Time
	switch {
	case err != nil && turnCtx.Err() != nil: // a stop, not an engine's failure
		terminal = parser.Event{Type: parser.Error, Message: "stopped", Reason: parser.Stopped}
		if errors.Is(turnCtx.Err(), context.DeadlineExceeded) {
			terminal = parser.Event{Type: parser.Error, Message: "timed out", Reason: parser.TimedOut}
		}
	case err != nil:
		terminal = parser.Event{Type: parser.Error, Message: err.Error(), Reason: parser.Failed}
	default:
		// Messages sent meanwhile may go into the run (BusySteer) until
		// its terminal event; those it could not take queue after it.
		endSteering := d.startSteering(c, run, set.engine, m, ws.Dir, log)
		var ask *askState // made at the first request: most turns ask nothing
		// One batch is what the engine had ready at once: one call to the
		// output for many lines of the CLI.
		for batch := run.Next(); batch != nil; batch = run.Next() {
			show := batch[:0] // the batch is ours: filtered in place
			for _, ev := range batch {
				if ev.Type == parser.PermissionRequest {
					if len(show) > 0 { // what the agent said before it asked goes first
						out.add(show...)
						show = show[:0]
					}
					if ask == nil {
						ask = &askState{m: m, key: key, mode: set.mode, run: run, anchor: out.anchor}
					}
					d.askPermission(ask, ev)
					continue // shown as a question, not as tool activity
				}
				show = append(show, ev)
				if ev.SessionReset && !fresh && c.sameGeneration(gen) {
					if err := d.opts.Store.ClearSession(key); err != nil {
						log.Error("clear session", "err", err)
					}
				}
				if ev.Type == parser.Text && firstText.IsZero() {
					firstText = time.Now()
				}
			}
			if n := len(show); n > 0 && show[n-1].Terminal() {
				terminal, show = show[n-1], show[:n-1]
			}
			if len(show) > 0 {
				out.add(show...)
			}
		}
		steered = endSteering()
	}
	if run != nil {
		d.endRequests(run, key, approvalEnd(terminal))
		select {
		case <-run.Exited():
			release()
		default: // the CLI is still on its way out
			go func() {
				<-run.Exited()
				release()
			}()
		}
	} else {
		release()
	}
	back := handback{dir: box.dir}
	back.files, back.more = box.left()
	if shared() { // another conversation's agent worked there too: the files may be its
		back.withheld, back.files, back.more = len(back.files)+back.more, nil, 0
	}
	end := store.TurnEnd{Key: key, Record: d.turnRecord(key, m, terminal, start)}
	if startErr == nil {
		u := turnUsage(terminal, time.Since(start))
		end.Usage, end.User, end.At = &u, userOf(m), d.now()
		if d.opts.Footer && terminal.Type == parser.Done {
			out.add(parser.Event{Type: parser.Text, Content: "\n\n" + footer(set.engine, set.model, u)})
		}
	}
	if terminal.SessionID != "" && !fresh && (terminal.Type == parser.Done || cutShort(terminal)) {
		end.Session = d.sessionChange(c, gen, set.engine, terminal.SessionID)
	}
	// The answer is delivered as soon as the CLI's result is parsed, with
	// the files the agent left; the session, the usage and the turn's
	// record are saved meanwhile, in one write. A posted answer is seen
	// with its usage counted (/usage, the budgets): the platform's post
	// takes longer than the write. The conversation's next turn waits for
	// it and for the agent's process to be gone, which keeps the turn's
	// record in flight until then.
	saved := make(chan struct{})
	go func() {
		defer close(saved)
		if err := d.opts.Store.FinishTurn(end); err != nil {
			log.Error("save the turn's end (session, usage, record)", "err", err)
		}
	}()
	if m.Sink == nil {
		<-saved
	}
	d.measure(m, set.engine, terminal, startErr, firstText) // before the answer ends: a reader of it sees the turn counted
	out.finish(terminal, d.notice(ctx, terminal), back)
	<-saved
	log.Info("turn ended", "engine", set.engine, "outcome", outcome(terminal), "duration_ms", time.Since(start).Milliseconds())
	if run == nil {
		return out.close, nil
	}
	if len(steered) == 0 {
		select {
		case <-run.Exited():
			return out.close, nil
		default: // on its way out: the next turn need not wait to prepare
			cancelAt = func() { go func() { <-run.Exited(); cancel() }() }
			return out.close, run.Exited()
		}
	}
	<-run.Exited()
	// Now what the agent had not read of the steered messages is known.
	n := min(run.Untaken(), len(steered))
	for _, m := range steered[:len(steered)-n] { // read: done with their mailbox
		d.taken(c.key, m)
	}
	if n > 0 {
		log.Info("steered messages the agent had not read", "messages", n)
		d.notTaken(ctx, c, steered[len(steered)-n:], terminal)
	}
	return out.close, nil
}

// sessionChange is the change of the conversation's record to the session
// a turn ended in. Only the session changes: a /model sent meanwhile
// stays. The generation is checked inside the write so that a /new or
// /engine racing with it wins.
func (d *Dispatcher) sessionChange(c *conversation, gen int, eng, session string) func(*store.Conversation) bool {
	return func(sc *store.Conversation) bool {
		if !c.sameGeneration(gen) {
			return false
		}
		sc.Engine, sc.SessionID, sc.LastUsed = eng, session, time.Now()
		sc.Sessions = store.AddSession(sc.Sessions, session)
		return true
	}
}

// cutShort reports whether ev ended a turn that was stopped (/stop, busy:
// interrupt) or timed out: the session it was in is kept, so the next turn
// resumes what the agent did.
func cutShort(ev parser.Event) bool {
	return ev.Type == parser.Error && (ev.Reason == parser.Stopped || ev.Reason == parser.TimedOut)
}

// approvalEnd is why the permission requests still waiting when a turn
// ended with ev were denied.
func approvalEnd(ev parser.Event) store.ApprovalEnd {
	switch {
	case ev.Type == parser.Error && ev.Reason == parser.Stopped:
		return store.ApprovalStopped
	case ev.Type == parser.Error && ev.Reason == parser.TimedOut:
		return store.ApprovalTurnTimedOut
	}
	return store.ApprovalTurnEnded
}

// outcome names how a turn ended, for logs (and metrics): "done", or the
// terminal error's reason ("error", "crashed", "stopped", "timed_out").
func outcome(ev parser.Event) string {
	if ev.Type == parser.Done {
		return "done"
	}
	return ev.Reason.String()
}

// flushWait bounds how long a question waits for the answer's earlier
// text and activity to be posted before it goes anyway.
const flushWait = 5 * time.Second

// turnOutput is where a turn's events go: a Reply on the platform, or the
// message's Sink. started (nil: nothing to record) is engine.Turn.OnStart.
type turnOutput struct {
	add func(...parser.Event)
	// finish ends the answer with the terminal event and hands back the
	// files the agent left (to a Sink before the terminal event, on a
	// platform under the answer's final text, followed by notice).
	finish  func(terminal parser.Event, notice string, back handback)
	close   func()
	started func(engine.Group)
	// anchor is the answer message that what goes under the answer (a
	// question) anchors to, once what came before it is on the platform
	// (Reply.Flush); zero for a Sink, or when the platform does not post
	// it in time. It may wait for the platform: call it off the turn's
	// goroutine.
	anchor func() MessageRef
}

// output returns where m's answer goes. The turn is recorded in flight
// while it runs: from the start for a posted answer, which a restart marks
// interrupted; for a Sink only while an agent process runs, so that a
// restart after a hard kill can stop it.
func (d *Dispatcher) output(m Message, key store.Key, log *slog.Logger) turnOutput {
	f := &flight{st: d.opts.Store, log: log, t: store.InFlight{
		ID: newID(), Key: key, Platform: m.Platform, Channel: m.Channel, Thread: m.Thread, Started: time.Now(),
	}}
	if d.opts.Cluster != nil {
		f.t.Replica = d.opts.Cluster.Replica()
	}
	if m.Sink != nil {
		f.t.Stream = true
		return turnOutput{
			add: m.Sink,
			finish: func(ev parser.Event, _ string, back handback) {
				m.Sink(append(back.sinkEvents(), ev)...) // one write: the files, then the end
			},
			close:   f.end,
			started: f.started,
			anchor:  func() MessageRef { return MessageRef{} },
		}
	}
	a := d.poster(m.Platform)
	if a == nil {
		log.Error("no poster registered and no sink to answer on")
		d.takenLate(key, m)
		return turnOutput{add: func(...parser.Event) {}, finish: func(parser.Event, string, handback) {}, close: func() {},
			anchor: func() MessageRef { return MessageRef{} }}
	}
	place := d.place(m)
	strike := ""
	if m.strikeAtRecord {
		strike = m.mail
	}
	if !f.save("record turn", func(t *store.InFlight) {
		t.Channel, t.Thread, t.ReplyTo, t.Mail = place.Channel, place.Thread, place.ReplyTo, strike
	}) {
		d.takenLate(key, m) // as before: the turn runs, its mail struck on its own
	}
	f.mu.Lock()
	f.t.Mail = "" // struck: the record's later writes strike nothing
	f.mu.Unlock()
	var answerMu sync.Mutex
	var answer MessageRef // set by the reply's goroutine
	answerRef := func() MessageRef {
		answerMu.Lock()
		defer answerMu.Unlock()
		return answer
	}
	r := NewReply(d.life, a, place, log, func(ref MessageRef) {
		answerMu.Lock()
		answer = ref
		answerMu.Unlock()
		f.saveLater("record answer", func(t *store.InFlight) {
			t.AnswerChannel, t.AnswerThread, t.AnswerID = ref.Channel, ref.Thread, ref.ID
		})
	})
	stopTyping := func() {}
	if t, ok := a.(Typist); ok {
		stopTyping = t.Typing(d.life, m)
	}
	return turnOutput{
		add: r.Add,
		finish: func(_ parser.Event, notice string, back handback) {
			stopTyping()
			r.Finish(notice)
			back.toPoster(d.life, a, place, answerRef(), log)
		},
		close:   f.end,
		started: f.started,
		anchor: func() MessageRef {
			if ref := r.Flush(flushWait); ref.ID != "" {
				return ref
			}
			return answerRef()
		},
	}
}
