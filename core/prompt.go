package core

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/store"
)

// Prompt is a turn that no chat message asked for: a scheduled prompt's
// run, in the conversation where it was set, as the person who set it. Its
// answer is posted where a message of that person in that place would be
// answered, beginning with Header.
type Prompt struct {
	Platform, Workspace, Channel, Thread string
	User, UserName                       string
	// Operator marks a prompt the operator declared (bot.yaml): there is
	// no person whose access to check.
	Operator bool
	Text     string
	Header   string // the answer's first line, e.g. "⏰ daily-build · 09:00"; "" for a note
	Schedule string // the id of the schedule it is a run of, for the sources that keep its runs
	// Fresh runs the turn in a new agent session and keeps the
	// conversation's own session as it was.
	Fresh bool
	// BusyWait is how long the prompt waits for its conversation's
	// running turn (or waiting messages) to end; then it is skipped. It
	// never steers into nor interrupts a person's turn.
	BusyWait time.Duration
}

// How a Prompt ended (RunPrompt): an Outcome of its turn ("done",
// "failed", "stopped", "timed_out", "interrupted"), or one of these when
// no turn ran.
const (
	PromptSkippedBusy = "skipped_busy" // the conversation stayed busy for BusyWait
	PromptDenied      = "denied"       // its person is not in access.allow any more
	PromptOverBudget  = "over_budget"  // refused by a budget, which the chat was told
	PromptShutdown    = "shutdown"     // golem shut down before its turn began
	// PromptStarted: ctx ended once its turn was under way, which then
	// ends with the dispatcher's Close.
	PromptStarted = "started"
	// PromptUnreachable: no platform of its name is served here (its
	// token was removed), so no agent runs for an answer nobody would
	// see.
	PromptUnreachable = "unreachable"
	// PromptHandedOver: another replica claimed the conversation as the
	// prompt was admitted, and runs it from its mailbox as a message.
	PromptHandedOver = "handed_over"
)

// ownerPoll is how often a prompt waiting for a conversation that another
// replica runs looks whether it is free.
const ownerPoll = time.Second

// prompted is what a message made from a Prompt carries for its turn.
type prompted struct {
	header string
	fresh  bool
	once   sync.Once
	ended  chan string // gets the outcome once
}

// end reports how the prompt's turn ended; only the first call counts.
func (p *prompted) end(outcome string) {
	p.once.Do(func() { p.ended <- outcome })
}

// message is the chat message p stands for.
func (p Prompt) message() Message {
	return Message{Platform: p.Platform, Workspace: p.Workspace, Channel: p.Channel, Thread: p.Thread,
		User: p.User, UserName: p.UserName, Text: p.Text, Mentioned: true}
}

// RunPrompt runs p as a turn of its conversation and returns how it ended,
// once the turn has (or at once when none runs). Access is checked now, as
// for a message of p.User; the budgets as its turn begins. A conversation
// that is busy (a turn running or messages waiting) is waited for up to
// p.BusyWait, and then p is skipped. ctx ending gives up the wait, not a
// turn that has begun. With a Cluster the turn runs here only when this
// replica owns the conversation or can claim it while it is idle.
func (d *Dispatcher) RunPrompt(ctx context.Context, p Prompt) string {
	m := p.message()
	if !p.Operator && !d.allowed(m) {
		return PromptDenied
	}
	pr := d.prompter(p.Platform)
	if pr == nil && d.poster(p.Platform) == nil {
		return PromptUnreachable
	}
	key := KeyFor(m, d.opts.Scope)
	if pr != nil {
		m.Sink = promptSink(pr, key, p)
	}
	run := &prompted{header: p.Header, fresh: p.Fresh, ended: make(chan string, 1)}
	m.prompt = run
	busy, cancel := context.WithTimeout(ctx, p.BusyWait)
	defer cancel()
	for {
		queued, idle, closing := d.queueIdle(key, m)
		if d.opts.Cluster != nil && !closing && queued {
			queued, idle = d.admitPrompt(ctx, busy, key, m)
			if queued && idle != nil {
				return PromptHandedOver
			}
		}
		if closing {
			return PromptShutdown
		}
		if queued {
			select {
			case o := <-run.ended:
				return o
			case <-ctx.Done():
				return PromptStarted
			}
		}
		select {
		case <-idle:
		case <-busy.Done(): // ctx's end too
			if ctx.Err() != nil {
				return PromptShutdown
			}
			return PromptSkippedBusy
		}
	}
}

// queueIdle queues m for a turn if its conversation is idle here (with a
// Cluster it only reports that it would: admitPrompt queues it);
// otherwise idle is closed once it is.
func (d *Dispatcher) queueIdle(key store.Key, m Message) (queued bool, idle <-chan struct{}, closing bool) {
	d.mu.Lock()
	if d.closing.Load() {
		d.mu.Unlock()
		return false, nil, true
	}
	c := d.conversationLocked(key)
	c.mu.Lock()
	d.mu.Unlock()
	defer c.mu.Unlock()
	if c.working() {
		if c.quiet == nil {
			c.quiet = make(chan struct{})
		}
		return false, c.quiet, false
	}
	if d.opts.Cluster != nil {
		return true, nil, false
	}
	m.arrived = time.Now()
	c.queue = append(c.queue, m)
	d.workers.Add(1)
	go d.work(c)
	return true, nil, false
}

// admitPrompt runs m, a prompt of key that is idle here, through the
// Cluster: when another replica runs key, idle ticks to look again (queued
// false); otherwise m goes into key's mailbox and is queued here (queued
// true, idle nil), unless another replica claimed key meanwhile and runs
// it (queued true, idle not nil). A message that came here meanwhile runs
// first: m is not queued behind it, and idle is closed once the
// conversation is quiet (queued false), as for a busy conversation. A
// prompt with a Sink cannot move to the replica that claimed key
// meanwhile: its claim waits for that replica to let go until busy ends,
// and then idle is nil (queued false).
func (d *Dispatcher) admitPrompt(ctx, busy context.Context, key store.Key, m Message) (queued bool, idle <-chan struct{}) {
	cl := d.opts.Cluster
	poll := func() <-chan struct{} {
		ch := make(chan struct{})
		time.AfterFunc(ownerPoll, func() { close(ch) })
		return ch
	}
	if owner := cl.Owner(key); owner != "" && owner != cl.Replica() {
		return false, poll()
	}
	if m.Sink != nil {
		ctx = busy
	}
	here := false
	var quiet <-chan struct{}
	var behind Message // m, with its mail id, when a message that came meanwhile runs
	err := cl.Admit(ctx, key, m, func(m Message) {
		d.mu.Lock()
		c := d.conversationLocked(key)
		c.mu.Lock() // before d.mu is let go, as in accept
		d.mu.Unlock()
		defer c.mu.Unlock()
		if c.working() {
			if c.quiet == nil {
				c.quiet = make(chan struct{})
			}
			quiet, behind = c.quiet, m
			return
		}
		here = true
		m.arrived = time.Now()
		c.queue = append(c.queue, m)
		d.workers.Add(1)
		go d.work(c)
	})
	if quiet != nil {
		d.taken(key, behind) // its mail: the prompt comes again once it is quiet, or not at all
		return false, quiet
	}
	if err != nil {
		if ctx.Err() != nil { // the claim waited as long as the prompt may
			return false, nil
		}
		d.log.Warn("scheduled prompt not admitted: the store is out of reach", "conversation", key, "err", err)
		return false, poll()
	}
	if !here {
		return true, poll()
	}
	return true, nil
}

// Prompter is implemented by sources whose answers stream to a Sink
// rather than being posted (the terminal, the HTTP API), so that a Prompt
// of theirs (a scheduled run) has somewhere to go. Its turn's events, the
// header first, go to the sink Prompted returns as a message's Sink would
// get them, ending with the terminal event; a note of the schedule's own
// (Notify) comes as a Text event and Done. Prompted is called, with the
// prompt's conversation key, as the first event comes, so a prompt skipped
// before its turn calls nothing. Neither it nor the sink may block, but
// for the terminal event, which may wait for one store write (the HTTP API
// keeps the run's outcome): the turn's end waits for its own write then.
type Prompter interface {
	Prompted(key store.Key, p Prompt) func(...parser.Event)
}

// prompter is where platform's prompts stream, or nil.
func (d *Dispatcher) prompter(platform string) Prompter {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.prompters[platform]
}

// promptSink is the Sink of p's message: pr's sink for it, asked for as
// the first event comes.
func promptSink(pr Prompter, key store.Key, p Prompt) func(...parser.Event) {
	var once sync.Once
	var sink func(...parser.Event)
	return func(evs ...parser.Event) {
		once.Do(func() { sink = pr.Prompted(key, p) })
		sink(evs...)
	}
}

// Notify posts text where p's answer would go, for everyone there to see:
// a short note of the schedule's own (paused, a run missed), not a turn.
// It does not wait for the platform.
func (d *Dispatcher) Notify(p Prompt, text string) {
	m := p.message()
	key := KeyFor(m, d.opts.Scope)
	if pr := d.prompter(m.Platform); pr != nil {
		d.answers.Put(key, func() {
			pr.Prompted(key, p)(parser.Event{Type: parser.Text, Content: text}, parser.Event{Type: parser.Done})
		})
		return
	}
	d.answers.Put(key, func() {
		a := d.poster(m.Platform)
		if a == nil {
			d.log.Warn("schedule note: no poster for the platform", "platform", m.Platform, "conversation", key)
			return
		}
		if _, err := a.Send(d.life, d.place(m), text); err != nil {
			d.log.Warn("schedule note", "platform", m.Platform, "conversation", key, "err", err)
		}
	})
}

// promptEnded tells a prompt's RunPrompt how its turn ended; nothing for
// a chat message.
func (m Message) promptEnded(outcome string) {
	if m.prompt != nil {
		m.prompt.end(outcome)
	}
}

// promptEvents are what a prompt's answer begins with: its header line.
func (m Message) promptEvents() []parser.Event {
	if m.prompt == nil || m.prompt.header == "" {
		return nil
	}
	return []parser.Event{{Type: parser.Text, Content: m.prompt.header + "\n\n"}}
}

// Scheduler answers the schedule commands (/every, /at, /schedules,
// /unschedule, /pause, /unpause, /runnow) of m's conversation key: package
// schedule's Book. Called from Handle and for clicks: it may write to the
// store, and must not wait for a turn.
type Scheduler interface {
	Command(m Message, key store.Key, name, args string) string
	// Choices are the buttons under /schedules' answer in key (Data
	// "golem:VERB:ID", VERB one of the commands that take an id).
	Choices(key store.Key) []Choice
}

// scheduleVerbs are the schedule commands a button may name.
var scheduleVerbs = map[string]bool{"runnow": true, "pause": true, "unpause": true, "unschedule": true}

// listSchedules answers /schedules, with buttons where the platform has
// them, in the conversation's answers.
func (d *Dispatcher) listSchedules(m Message, key store.Key) {
	queued := d.answers.Add(key, func() (func(), bool) {
		text := d.opts.Schedules.Command(m, key, "schedules", "")
		choices := d.opts.Schedules.Choices(key)
		return func() { d.deliverChoices(m, "schedules", text, choices) }, true
	})
	if !queued && m.Sink != nil {
		m.Sink(parser.Event{Type: parser.Error, Message: "golem is shutting down", Reason: parser.Interrupted})
	}
}

// scheduleAction answers a click on a /schedules button as the command it
// names, from the clicker.
func (d *Dispatcher) scheduleAction(a Action, verb, id string) ActionResult {
	m := Message{Platform: a.Platform, Workspace: a.Workspace, Channel: a.Channel, Thread: a.Thread, User: a.User, UserName: a.UserName}
	if !d.allowed(m) {
		return ActionResult{Refusal: "You are not allowed to use this bot.", Err: ErrNotApprover}
	}
	if d.opts.Schedules == nil {
		return ActionResult{Refusal: "Schedules are off in this golem.", Err: ErrUnknownRequest}
	}
	text := d.opts.Schedules.Command(m, KeyFor(m, d.opts.Scope), verb, id)
	if strings.HasPrefix(text, "⚠️") {
		return ActionResult{Refusal: text, Err: ErrDecided}
	}
	return ActionResult{Settled: text + " — " + firstNonEmpty(a.UserName, a.User)}
}
