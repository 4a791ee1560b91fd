package core

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/internal/relay"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/sandbox"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/worktree"
)

// SeenTTL is how long a platform event id is remembered for
// deduplication; platforms redeliver within minutes.
const SeenTTL = 24 * time.Hour

// refusalEvery limits refusals to one per user in this time.
const refusalEvery = 10 * time.Minute

// Options configure a Dispatcher.
type Options struct {
	Engines       map[string]engine.Engine // by config name; /engine and /help offer these
	DefaultEngine string
	Models        map[string]string // default model per engine; "" = CLI default
	// Channels overrides engine, model or workdir per "platform:channel".
	Channels  map[string]Override
	Store     store.Store
	Workspace string // absolute; the agent's working directory
	// Workdirs gives each conversation its working directory in Workspace
	// or its channel's workdir: that folder itself, or a git worktree of
	// its own. nil is the folder itself.
	Workdirs *worktree.Workspaces
	// Sandbox runs each turn's agent in golem's sandbox (with the
	// channel's Override.Sandbox); nil runs them unsandboxed.
	Sandbox *sandbox.Sandbox
	// PRCommand is what /pr runs in a conversation's worktree, {branch}
	// replaced by its branch; "" and /pr explains how to set it.
	PRCommand string
	Scope     Scope    // default ScopeChannel
	Allow     []string // "platform:user", "platform:*" or "*"
	// Trusted names the platforms whose every user may talk to the bot
	// without being in Allow: the ones that are already behind the
	// operator's own door (the terminal, the HTTP API on loopback or behind
	// its token). cmd/bot decides; core names no platform.
	Trusted []string
	Timeout time.Duration // per turn; default 10m
	// Permissions is the approval policy (mode, approvers, timeout).
	Permissions Permissions
	// MaxConcurrent bounds turns running at once; default 8. A turn holds
	// its slot until its agent has exited, not until its answer is
	// delivered.
	MaxConcurrent int
	// QueueDepth bounds waiting messages per conversation; default 5,
	// negative means none may wait. It also bounds the messages waiting to
	// be steered into a running turn (at least one).
	QueueDepth int
	// Busy is what a message does while its conversation's answer runs
	// (steer, interrupt or queue); the zero value steers where the
	// engine can and queues otherwise.
	Busy   Busy
	Logger *slog.Logger
	// Meter is told how turns end, for metrics; nil counts nothing.
	Meter Meter
	// Budgets refuse messages from users and conversations past a budget.
	Budgets Budgets
	// Context bounds the chat context a turn's prompt gets from a source
	// that is a Historian; the zero value turns it off.
	Context ContextLimits
	// Footer adds a line under each final answer: engine, model, tokens,
	// cost and time, as far as the CLI reported them.
	Footer bool
	// Now is the clock of usage and budgets; nil is time.Now.
	Now func() time.Time
	// Cluster shares conversations with other replicas; nil: this golem
	// runs them all (see Cluster).
	Cluster Cluster
	// Schedules answers the schedule commands; nil: they say schedules
	// are off.
	Schedules Scheduler
}

// Dispatcher routes incoming messages to conversations: it deduplicates
// redelivered events, checks access, answers chat commands, queues turns
// per conversation (one writer each), runs them under the global limit and
// streams replies back through the adapter the message came from. It
// implements Handler.
type Dispatcher struct {
	opts  Options
	log   *slog.Logger
	meter Meter
	slots chan struct{} // global turn limit

	// life bounds platform calls and turns; cancelled when Close gives up.
	life     context.Context
	stopLife context.CancelFunc

	mu          sync.Mutex
	posters     map[string]Poster // by platform; a Source that is not a Poster answers through Sinks
	historians  map[string]Historian
	prompters   map[string]Prompter            // by platform: where its Prompts' answers stream
	outboxes    map[string]map[*outboxUse]bool // by folder: the running turns using it (useOutbox)
	convs       map[store.Key]*conversation    // see conversation.go
	refused     map[string]time.Time
	interrupted []store.InFlight
	// closing is set once, under mu, by Close; read without mu where a
	// conversation's mu is held.
	closing atomic.Bool
	workers sync.WaitGroup

	// answers sends the answers that are not turns (command output,
	// refusals, "queue full", notices of messages that never ran) off the
	// goroutine that asked for them, in order per conversation key.
	answers *relay.Relay[store.Key, func()]

	approvals approvals // permission requests waiting for an answer
}

var _ Handler = (*Dispatcher)(nil)

// NewDispatcher validates opts and returns a dispatcher. Turns that were in
// flight when the bot last stopped are answered with an "interrupted"
// notice as soon as their platform's adapter is registered; agents of
// theirs that are still running (golem was killed outright) are stopped
// first, before NewDispatcher returns (see stopLeftovers).
func NewDispatcher(opts Options) (*Dispatcher, error) {
	if opts.Store == nil {
		return nil, errors.New("core: dispatcher needs a store")
	}
	if _, ok := opts.Engines[opts.DefaultEngine]; !ok {
		return nil, fmt.Errorf("core: default engine %q is not configured", opts.DefaultEngine)
	}
	if opts.Scope == "" {
		opts.Scope = ScopeChannel
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Minute
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 8
	}
	if opts.QueueDepth == 0 {
		opts.QueueDepth = 5
	}
	if opts.Permissions.Mode == "" {
		opts.Permissions.Mode = engine.ModeAsk
	}
	if opts.Permissions.Timeout <= 0 {
		opts.Permissions.Timeout = 10 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Workdirs == nil {
		opts.Workdirs, _ = worktree.New(worktree.Options{Logger: opts.Logger}) // shared: never fails
	}
	interrupted, err := opts.Store.InFlightTurns()
	if err != nil {
		return nil, fmt.Errorf("core: read interrupted turns: %w", err)
	}
	if opts.Cluster == nil {
		interrupted = stopLeftovers(opts.Store, opts.Logger, interrupted)
	}
	if opts.Meter == nil {
		opts.Meter = noMeter{}
	}
	if opts.Cluster != nil {
		// Only this replica's own agents are stopped here (a replica
		// restarted under its name, on its machine); the turns are told
		// they were interrupted by whichever replica takes their
		// conversations over (Host.TakeOver).
		interrupted = slices.DeleteFunc(interrupted, func(t store.InFlight) bool { return t.Replica != opts.Cluster.Replica() })
		stopLeftovers(opts.Store, opts.Logger, interrupted)
		interrupted = nil
	}
	life, stop := context.WithCancel(context.Background())
	return &Dispatcher{
		meter:       opts.Meter,
		answers:     relay.New(func(_ store.Key, send func()) { send() }),
		opts:        opts,
		log:         opts.Logger,
		slots:       make(chan struct{}, opts.MaxConcurrent),
		life:        life,
		stopLife:    stop,
		posters:     map[string]Poster{},
		historians:  map[string]Historian{},
		prompters:   map[string]Prompter{},
		outboxes:    map[string]map[*outboxUse]bool{},
		convs:       map[store.Key]*conversation{},
		refused:     map[string]time.Time{},
		interrupted: interrupted,
	}, nil
}

// Register makes src a source of messages. When src is also a Poster it is
// the route for replies to messages of its platform, and the notices of
// turns on that platform that a restart interrupted are posted to it; a
// Source that is not a Poster answers only through each message's Sink, so
// its interrupted turns are just forgotten. A Source that is a Historian
// gives its turns their chat context. Call before src.Start.
func (d *Dispatcher) Register(src Source) {
	p, posts := src.(Poster)
	d.mu.Lock()
	if posts {
		d.posters[src.Platform()] = p
	}
	if h, ok := src.(Historian); ok {
		d.historians[src.Platform()] = h
	}
	if pr, ok := src.(Prompter); ok {
		d.prompters[src.Platform()] = pr
	}
	var mine []store.InFlight
	d.interrupted = slices.DeleteFunc(d.interrupted, func(t store.InFlight) bool {
		if t.Platform == src.Platform() {
			mine = append(mine, t)
			return true
		}
		return false
	})
	d.mu.Unlock()
	d.expireApprovals(src.Platform(), p)
	if len(mine) == 0 {
		return
	}
	if !posts {
		for _, t := range mine {
			d.log.Info("interrupted turn had no open stream to tell", "platform", t.Platform, "conversation", t.Key)
			d.endTurn(t.ID)
		}
		return
	}
	d.workers.Add(1)
	go func() {
		defer d.workers.Done()
		for _, t := range mine {
			d.noticeInterrupted(p, t)
		}
	}()
}

func (d *Dispatcher) noticeInterrupted(a Poster, t store.InFlight) {
	const text = "⚠️ _golem restarted while answering this, so the answer is incomplete. Send your message again to continue; the conversation's session is kept._"
	place := Place{Channel: t.Channel, Thread: t.Thread, ReplyTo: t.ReplyTo}
	if t.AnswerID != "" {
		place = Place{Channel: t.AnswerChannel, Thread: t.AnswerThread, ReplyTo: t.AnswerID}
		if err := a.SendActivity(d.life, MessageRef{Channel: t.AnswerChannel, Thread: t.AnswerThread, ID: t.AnswerID}, text); err == nil {
			d.endTurn(t.ID)
			return
		}
	}
	if _, err := a.Send(d.life, place, text); err != nil {
		d.log.Warn("post interrupted notice", "platform", t.Platform, "conversation", t.Key, "err", err)
	}
	d.endTurn(t.ID)
}

// Handle takes one incoming message and returns at once; see Handler for
// the contract. The dedupe record and a command's change to the store are
// written before it returns, and no other store call is made on the way (a
// message's budget is read on its conversation's goroutine, before its
// turn or its steer); a turn is queued for its conversation and runs
// on that conversation's goroutine; an answer that is not a turn is queued
// for the conversation's answers and sent by them. ctx is not used: what
// Handle starts outlives the caller and ends with Close.
func (d *Dispatcher) Handle(_ context.Context, m Message) {
	log := d.log.With("platform", m.Platform, "channel", m.Channel, "user", m.User)
	allowed := d.allowed(m)
	if m.EventID != "" {
		if cl := d.opts.Cluster; cl != nil && cl.Dedupes() && allowed && m.Sink == nil {
			m.dedupe = m.Platform + ":" + m.EventID // in the mailbox's round trip
		} else if first, err := d.opts.Store.MarkSeen(m.Platform+":"+m.EventID, SeenTTL); err != nil {
			log.Error("dedupe event", "err", err)
		} else if !first {
			log.Debug("duplicate event dropped", "event", m.EventID)
			return
		}
	}
	if !allowed {
		d.refuse(m, log)
		return
	}
	d.admit(m)
}

// accept runs a message admitted to this replica: answers a command, or
// steers it into its conversation's running turn, or queues it for a turn
// (a message queued is struck from its mailbox as its turn begins; any
// other at once).
func (d *Dispatcher) accept(m Message) {
	key := KeyFor(m, d.opts.Scope)
	text := strings.TrimSpace(m.Text)
	if text == "" && len(m.Attachments) == 0 {
		if m.Sink != nil { // a stream waits for its terminal event
			d.answer(m, "the message is empty", true)
		}
		d.taken(key, m)
		d.released(key)
		return
	}
	if name, args, ok := parseCommand(text); ok {
		d.command(m, name, args)
		d.taken(key, m)
		d.released(key)
		return
	}
	d.mu.Lock()
	if d.closing.Load() {
		d.mu.Unlock()
		if d.opts.Cluster != nil && m.Sink == nil { // its mail waits for the next owner
			return
		}
		d.answer(m, "golem is shutting down; send your message again in a moment.", true)
		return
	}
	c := d.conversationLocked(key)
	c.mu.Lock() // before d.mu is let go: Close, once closing, finds m queued or refused
	d.mu.Unlock()
	busy := c.working()
	tellQueued := false
	if busy {
		var steered bool
		if steered, tellQueued = d.busy(c, m); steered {
			c.mu.Unlock() // its mail stays until the turn has read it, or it has a turn of its own
			return
		}
	}
	if busy && len(c.queue) >= d.waitLimit() {
		n := len(c.queue)
		c.mu.Unlock()
		d.taken(key, m)
		d.answer(m, fmt.Sprintf("⏳ I'm still working on this conversation and %d messages are waiting. Wait for the answer, or send /stop.", n), true)
		return
	}
	m.arrived = time.Now()
	c.queue = queueInOrder(c.queue, m)
	if !busy {
		d.workers.Add(1)
		go d.work(c)
	}
	eng := c.engine()
	c.mu.Unlock()
	if tellQueued {
		d.meter.BusyMessage(m.Platform, eng, "queued")
		note := fmt.Sprintf(queuedNote, eng)
		if m.Sink != nil { // the stream goes on: its turn is to come
			m.Sink(parser.Event{Type: parser.Warning, Message: note})
		} else {
			d.answer(m, note, false)
		}
	}
}

// work runs the conversation's queued turns one after another, until none
// waits.
func (d *Dispatcher) work(c *conversation) {
	defer d.workers.Done()
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.running = nil
			if c.quiet != nil {
				close(c.quiet)
				c.quiet = nil
			}
			c.mu.Unlock()
			d.released(c.key)
			return
		}
		m := c.queue[0]
		c.queue[0] = Message{} // the array outlives the slice: keep nothing of m in it
		c.queue = c.queue[1:]
		if len(c.queue) == 0 {
			c.queue = nil
		}
		ctx, stop, interrupt := turnContext(d.life)
		c.running = &running{started: time.Now(), stop: stop, interrupt: interrupt, queued: true}
		var newer []Message // came while m waited: under busy: interrupt, one interrupts m in turn
		if d.opts.Busy == BusyInterrupt {
			newer = slices.Clone(c.queue)
		}
		gen, prev, notices := c.generation, c.exiting, c.notices
		c.mu.Unlock()
		if notices != nil {
			<-notices // a takeover's interrupted notices come first
		}
		if slices.ContainsFunc(newer, func(n Message) bool { return d.overBudget(n) == "" }) {
			interrupt() // one past its budget, refused at its turn, stops nothing
		}

		// The budget is read here, not as the message came: Handle makes
		// no store round trip but the dedupe's.
		if refusal := d.overBudget(m); refusal != "" {
			<-d.answer(m, refusal, true)
			d.taken(c.key, m)
			m.promptEnded(PromptOverBudget)
			stop()
			continue
		}
		if d.takeSlot(ctx) {
			c.mu.Lock()
			c.running.queued = false
			c.mu.Unlock()
			// Struck only now: while m waits for a slot its mail stays, so
			// that a replica that takes the conversation over runs it. With
			// a store that can, the turn's first record strikes it.
			if m.strikeAtRecord = d.strikesAtRecord(m); !m.strikeAtRecord {
				d.taken(c.key, m)
			}
			release := sync.OnceFunc(func() { <-d.slots })
			forget, exiting := d.runTurn(ctx, c, m, gen, release, prev)
			if prev != nil && exiting == nil {
				<-prev // a turn that failed before it spawned did not wait for it
			}
			c.mu.Lock()
			c.exiting = exiting
			c.mu.Unlock()
			if exiting != nil { // the run gives the slot back as its agent exits
				d.workers.Add(1)
				go func() {
					defer d.workers.Done()
					<-exiting
					forget()
					stop() // only now: a cancelled turn kills its agent
					c.mu.Lock()
					if c.exiting == exiting {
						c.exiting = nil
					}
					c.mu.Unlock()
					d.released(c.key)
				}()
				continue
			}
			release()
			forget() // before the conversation's next turn, without a slot
		} else if c.mu.Lock(); c.running.givenUp {
			c.mu.Unlock() // its mail waits for the conversation's next owner
		} else { // stopped while waiting for a slot
			c.mu.Unlock()
			d.taken(c.key, m)
			// Waited for, so that it comes before the next turn's answer.
			end := parser.Event{Type: parser.Error, Message: "stopped", Reason: parser.Stopped}
			d.measure(m, d.engineFor(m), end, nil, time.Time{})
			<-d.finishUnstarted(ctx, m, end)
		}
		m.promptEnded(Outcome(parser.Event{Type: parser.Error, Reason: parser.Failed})) // when nothing was measured
		stop()
	}
}

// takeSlot waits for one of MaxConcurrent's slots; false when the turn of
// ctx was stopped first (also before it began to wait).
func (d *Dispatcher) takeSlot(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	select {
	case d.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// finishUnstarted tells a message's sender that its turn (of ctx) never
// ran: a Sink gets end itself, a platform its notice. The returned channel
// is closed once the notice is sent (see answer).
func (d *Dispatcher) finishUnstarted(ctx context.Context, m Message, end parser.Event) <-chan struct{} {
	if m.Sink != nil {
		m.Sink(end)
		done := make(chan struct{})
		close(done)
		return done
	}
	return d.answer(m, d.notice(ctx, end), true)
}

// shutdownEnd ends a message that was not run because golem shut down.
var shutdownEnd = parser.Event{Type: parser.Error, Reason: parser.Interrupted,
	Message: "golem is shutting down; this message was not run. Send it again later."}

// Close stops taking messages, lets running turns finish until ctx is
// done, then stops them (they end "stopped" with their partial answers
// kept), and waits for every answer to be delivered: the turns' and the
// short ones Handle queued, also those asked for while Close waits (a
// message that arrives meanwhile is told golem is shutting down). If a
// platform still has not answered 10 s after ctx is done, the calls to it
// are cancelled.
func (d *Dispatcher) Close(ctx context.Context) error {
	d.mu.Lock()
	d.closing.Store(true)
	d.mu.Unlock()
	var dropped []Message
	for _, c := range d.conversations() {
		c.mu.Lock()
		dropped = append(dropped, c.queue...)
		c.queue = nil
		c.mu.Unlock()
	}
	for _, m := range dropped { // queued, not waited for: Close's wait below covers them
		if d.opts.Cluster != nil && m.Sink == nil {
			continue // its mail waits for the replica that takes the conversation over
		}
		d.measure(m, d.engineFor(m), shutdownEnd, nil, time.Time{})
		d.finishUnstarted(d.life, m, shutdownEnd)
	}

	idle := make(chan struct{})
	go func() {
		d.workers.Wait()  // turns, and the answers they wait for
		d.answers.Close() // then every answer queued until now
		close(idle)
	}()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
	}
	for _, c := range d.conversations() {
		c.mu.Lock()
		if c.running != nil {
			c.running.stop()
		}
		c.mu.Unlock()
	}
	select {
	case <-idle:
	case <-time.After(10 * time.Second): // a platform that never answers
		d.stopLife()
		<-idle
	}
	return nil
}

// Admits implements Gate: whether m's sender may use the bot.
func (d *Dispatcher) Admits(m Message) bool { return d.allowed(m) }

func (d *Dispatcher) allowed(m Message) bool {
	if slices.Contains(d.opts.Trusted, m.Platform) {
		return true
	}
	for _, a := range d.opts.Allow {
		if a == "*" || a == m.Platform+":*" || a == m.Platform+":"+m.User {
			return true
		}
	}
	return false
}

func (d *Dispatcher) refuse(m Message, log *slog.Logger) {
	who := m.Platform + ":" + m.User
	d.mu.Lock()
	last, seen := d.refused[who]
	now := time.Now()
	if seen && now.Sub(last) < refusalEvery {
		d.mu.Unlock()
		log.Info("unauthorized user ignored")
		return
	}
	if len(d.refused) >= 1000 { // forget old refusals, so strangers cannot grow the map forever
		for w, at := range d.refused {
			if now.Sub(at) >= refusalEvery {
				delete(d.refused, w)
			}
		}
	}
	d.refused[who] = now
	d.mu.Unlock()
	log.Warn("unauthorized user refused")
	d.answer(m, fmt.Sprintf("Sorry, you are not allowed to use this bot. Ask its operator to add `%s` to `access.allow`.", who), true)
}

// answer sends a short answer that is not a turn: command output, a
// refusal, a full queue, a notice. Privately where the adapter can (isErr
// marks it an error for Sink consumers). It does not wait for the platform:
// the answer is sent by the conversation's answers, after the ones asked
// for before it, and the returned channel is closed once it has been sent
// (or has failed, which is logged). A Sink is called at once, since it
// must not block.
func (d *Dispatcher) answer(m Message, text string, isErr bool) <-chan struct{} {
	done := make(chan struct{})
	if m.Sink != nil {
		if isErr {
			m.Sink(parser.Event{Type: parser.Error, Message: text})
		} else {
			m.Sink(parser.Event{Type: parser.Text, Content: text})
			m.Sink(parser.Event{Type: parser.Done})
		}
		close(done)
		return done
	}
	key := KeyFor(m, d.opts.Scope)
	queued := d.answers.Put(key, func() {
		defer close(done)
		d.post(m, text)
	})
	if !queued {
		d.log.Warn("answer dropped: golem has shut down", "platform", m.Platform, "conversation", key)
		close(done)
	}
	return done
}

// post sends one short answer to the platform m came from.
func (d *Dispatcher) post(m Message, text string) {
	a := d.poster(m.Platform)
	if a == nil {
		d.log.Error("no poster registered and no sink to answer on", "platform", m.Platform)
		return
	}
	// A long answer (/help, /status with much pending) goes in as many
	// messages as the platform's limit needs, like an agent's answer.
	for _, piece := range Split(text, a.Limits().MaxLen, a.Measure) {
		if p, ok := a.(PrivateReplier); ok {
			if err := p.ReplyPrivately(d.life, m, piece); err != nil {
				d.log.Warn("private reply", "platform", m.Platform, "err", err)
				return
			}
			continue
		}
		if _, err := a.Send(d.life, d.place(m), piece); err != nil {
			d.log.Warn("reply", "platform", m.Platform, "err", err)
			return
		}
	}
}

// poster is where answers to messages of platform are posted, or nil.
func (d *Dispatcher) poster(platform string) Poster {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.posters[platform]
}

// place is where the answer to m goes.
func (d *Dispatcher) place(m Message) Place {
	return Place{Channel: m.Channel, Thread: m.Thread, ReplyTo: m.ID, StartThread: d.opts.Scope == ScopeThread}
}

func (d *Dispatcher) endTurn(id string) {
	if err := d.opts.Store.EndTurn(id); err != nil {
		d.log.Error("end turn", "err", err)
	}
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
