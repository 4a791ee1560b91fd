package core

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/worktree"
)

// This file is what the operator's view (httpapi's /v1/conversations and
// /admin) reads of the conversations core holds and does to them: the
// same paths as the chat's /stop, /new, /allow, /diff, without a message.

// Live is what one conversation is doing now.
type Live struct {
	// State is "running" (an answer runs), "waiting" (its agent waits for
	// an approval), "queued" (its turn waits for one of MaxConcurrent's
	// slots) or "idle".
	State string
	// Queued is how many of its messages wait behind the running turn.
	Queued int
	// Started is when the running turn began; zero when idle.
	Started time.Time
	// Engine is the running turn's engine, once known.
	Engine string
	// Replica runs it ("" for a golem alone).
	Replica string
}

// LiveStates reports every conversation that is not idle: those here, and,
// with a Cluster, those whose turns other replicas have in flight (by the
// store's records; what waits on another replica shows there as running).
func (d *Dispatcher) LiveStates() (map[store.Key]Live, error) {
	me := ""
	if d.opts.Cluster != nil {
		me = d.opts.Cluster.Replica()
	}
	waiting := map[store.Key]bool{}
	d.approvals.mu.Lock()
	for _, r := range d.approvals.pending {
		waiting[r.rec.Key] = true
	}
	d.approvals.mu.Unlock()
	out := map[store.Key]Live{}
	for _, c := range d.conversations() {
		c.mu.Lock()
		if c.working() {
			l := Live{State: "running", Queued: len(c.queue), Replica: me, Engine: c.engine()}
			if c.running != nil {
				l.Started = c.running.started
				if c.running.queued {
					l.State = "queued"
				}
			}
			if waiting[c.key] {
				l.State = "waiting"
			}
			out[c.key] = l
		}
		c.mu.Unlock()
	}
	if d.opts.Cluster == nil {
		return out, nil
	}
	turns, err := d.opts.Store.InFlightTurns()
	if err != nil {
		return out, err
	}
	for _, t := range turns {
		if _, here := out[t.Key]; !here && t.Replica != me {
			out[t.Key] = Live{State: "running", Started: t.Started, Replica: t.Replica}
		}
	}
	return out, nil
}

// Settings is what a conversation's next turn runs with: its stored
// choices over its channel's override over the defaults.
type Settings struct {
	Engine, Model string
	Permissions   engine.Mode
	// Isolation is "worktree" or "shared"; Branch is the conversation's
	// branch under worktree (whether or not it exists yet).
	Isolation string
	Branch    string
}

// SettingsOf reports conv's settings.
func (d *Dispatcher) SettingsOf(conv store.Conversation) Settings {
	set := d.settings(messageFor(conv.Key), conv)
	s := Settings{Engine: set.engine, Model: set.model, Permissions: set.mode, Isolation: string(d.opts.Workdirs.Isolation())}
	if d.opts.Workdirs.Isolation() == worktree.Worktree {
		s.Branch = worktree.Branch(conv.Key.String())
	}
	return s
}

// messageFor is a message of key's conversation with no sender: what the
// settings and the worktree commands read of one.
func messageFor(key store.Key) Message {
	return Message{Platform: key.Platform, Workspace: key.Workspace, Channel: key.Channel, Thread: key.Sub,
		Sink: func(...parser.Event) {}}
}

// ChannelName is the name of key's channel where its platform's poster
// tells it (see ChannelNamer), else "".
func (d *Dispatcher) ChannelName(key store.Key) string {
	if n, ok := d.poster(key.Platform).(ChannelNamer); ok {
		return n.ChannelName(key.Channel)
	}
	return ""
}

// Operator is who acts from the operator's view, as the audit and the
// approvals' records name it.
const Operator = "http:operator"

// StopConversation is /stop for key: the running answer stops, waiting
// messages are dropped, its pending approvals are denied. It returns the
// chat's answer to /stop. With a Cluster, a conversation that another
// replica owns is stopped there (see forwardOperator).
func (d *Dispatcher) StopConversation(ctx context.Context, key store.Key) (string, error) {
	if owner := d.ownerElsewhere(key); owner != "" {
		return d.forwardOperator(ctx, "stop", owner, key)
	}
	return d.stopHere(key), nil
}

func (d *Dispatcher) stopHere(key store.Key) string {
	d.endRequests(nil, key, store.ApprovalStopped)
	return d.stop(key)
}

// NewSession is /new for key; on the replica that owns it, as
// StopConversation.
func (d *Dispatcher) NewSession(ctx context.Context, key store.Key) (string, error) {
	if owner := d.ownerElsewhere(key); owner != "" {
		return d.forwardOperator(ctx, "new", owner, key)
	}
	return d.newSession(key)
}

// ownerElsewhere is the replica that owns key when it is not this one
// and nothing of key runs here; "" otherwise (alone, idle everywhere, or
// here).
func (d *Dispatcher) ownerElsewhere(key store.Key) string {
	cl := d.opts.Cluster
	if cl == nil || !d.Idle(key) {
		return ""
	}
	if owner := cl.Owner(key); owner != cl.Replica() {
		return owner
	}
	return ""
}

// An operator's action forwarded to another replica is an Action whose
// Data is "golem:operator-VERB:REPLICA:ARGS" (REPLICA query-escaped;
// ARGS the key for stop and new, "ID:DECISION:OPTION:KEY" for decide),
// from Platform "http", User "operator": Act does it only on the replica
// it names, and never for a click from a platform (HandleAction does not
// forward it).
const operatorVerb = "operator-"

// operatorAction is the Action that has replica owner do verb with args.
func (d *Dispatcher) operatorAction(verb, owner, args string) Action {
	platform, user, _ := strings.Cut(Operator, ":")
	return Action{Platform: platform, User: user, UserName: Operator,
		Data: "golem:" + operatorVerb + verb + ":" + url.QueryEscape(owner) + ":" + args}
}

// forwardOperator has replica owner do verb ("stop" or "new") to key,
// through the Cluster's forwarding of clicks, and returns its answer.
func (d *Dispatcher) forwardOperator(ctx context.Context, verb, owner string, key store.Key) (string, error) {
	res, ok := d.opts.Cluster.Forward(ctx, d.operatorAction(verb, owner, key.String()))
	if !ok {
		return "", fmt.Errorf("replica %s, which runs this conversation, did not answer", owner)
	}
	if res.Err != nil {
		return "", fmt.Errorf("on replica %s: %w", owner, res.Err)
	}
	return res.Settled, nil
}

// actAsOperator does a forwarded operator's action (see operatorVerb)
// when it names this replica; ok is false otherwise.
func (d *Dispatcher) actAsOperator(a Action, verb, replica, args string) (ActionResult, bool) {
	platform, user, _ := strings.Cut(Operator, ":")
	me, err := url.QueryUnescape(replica)
	if err != nil || d.opts.Cluster == nil || me != d.opts.Cluster.Replica() || a.Platform != platform || a.User != user {
		return ActionResult{}, false
	}
	rawKey := args
	var id, decision string
	option := -1
	if verb == "decide" {
		parts := strings.SplitN(args, ":", 4)
		if len(parts) != 4 {
			return ActionResult{Err: errors.New("a forwarded decision without its arguments")}, true
		}
		id, decision, rawKey = parts[0], parts[1], parts[3]
		if option, err = strconv.Atoi(parts[2]); err != nil {
			return ActionResult{Err: errors.New("a forwarded decision's option is not a number")}, true
		}
	}
	key, err := store.ParseKey(rawKey)
	if err != nil {
		return ActionResult{Err: fmt.Errorf("not a conversation key: %w", err)}, true
	}
	d.log.Info("operator's action forwarded from another replica", "conversation", key, "action", verb)
	switch verb {
	case "stop":
		return ActionResult{Settled: d.stopHere(key)}, true
	case "new":
		text, err := d.newSession(key)
		return ActionResult{Settled: text, Err: err}, true
	case "decide":
		return d.decideHere(key, id, decision, option), true
	}
	return ActionResult{Err: errors.New("no such operator's action: " + verb)}, true
}

// Diff is /diff for key, as the text a stream gets.
func (d *Dispatcher) Diff(key store.Key) (string, error) {
	ans := d.workAnswer(messageFor(key), key, "diff")
	if ans.isErr {
		return "", errors.New(strings.TrimPrefix(ans.text, "⚠️ **Error:** "))
	}
	return ans.text, nil
}

// Worktree reports key's worktree: found false when it has none (or runs
// shared), dirty when it holds changes since its branch started.
func (d *Dispatcher) Worktree(ctx context.Context, key store.Key) (w worktree.Workspace, dirty, found bool, err error) {
	if d.opts.Workdirs.Isolation() != worktree.Worktree {
		return worktree.Workspace{}, false, false, nil
	}
	conv, err := d.opts.Store.Conversation(key)
	if err != nil {
		return w, false, false, err
	}
	w, found, err = d.opts.Workdirs.Find(ctx, d.settings(messageFor(key), conv).workdir, key.String())
	if err != nil || !found {
		return w, false, found, err
	}
	c, err := d.opts.Workdirs.Diff(ctx, w)
	return w, c.Patch != "", true, err
}

// Pending is a permission request waiting for an answer.
type Pending struct {
	store.Approval
	Questions []parser.Question // AskUserQuestion's, with their options
}

// PendingApprovals are key's requests waiting for an answer here, oldest
// first.
func (d *Dispatcher) PendingApprovals(key store.Key) []Pending {
	d.approvals.mu.Lock()
	defer d.approvals.mu.Unlock()
	var out []Pending
	for _, r := range d.approvals.pending {
		if r.rec.Key == key {
			out = append(out, Pending{Approval: r.rec, Questions: r.questions})
		}
	}
	sortPending(out)
	return out
}

func sortPending(ps []Pending) {
	slices.SortFunc(ps, func(a, b Pending) int { return cmp.Or(a.Asked.Compare(b.Asked), cmp.Compare(a.ID, b.ID)) })
}

// Decide answers key's request id as the operator, whoever asked and
// whichever platform it was asked on: decision is "allow",
// "allow_session" or "deny"; option, when 0 or more, picks an
// AskUserQuestion's option (with allow). The question on the platform is
// settled with the decision. The result's Err wraps ErrUnknownRequest
// (no such request waits in key) or ErrDecided. With a Cluster, a request
// of a turn on another replica is decided there (see forwardOperator).
func (d *Dispatcher) Decide(ctx context.Context, key store.Key, id, decision string, option int) ActionResult {
	res := d.decideHere(key, id, decision, option)
	if !errors.Is(res.Err, ErrUnknownRequest) {
		return res
	}
	owner := d.ownerElsewhere(key)
	if owner == "" {
		if d.opts.Cluster != nil && d.decidedElsewhere(key, id) {
			return ActionResult{Refusal: refusal(ErrDecided), Err: ErrDecided}
		}
		return res
	}
	fwd, ok := d.opts.Cluster.Forward(ctx, d.operatorAction("decide", owner,
		id+":"+decision+":"+strconv.Itoa(option)+":"+key.String()))
	if !ok {
		return ActionResult{Refusal: "replica " + owner + ", which runs this conversation, did not answer",
			Err: fmt.Errorf("replica %s did not answer", owner)}
	}
	return fwd
}

// decidedElsewhere reports whether the store records key's request id as
// decided: by another replica, whose turn may have ended since.
func (d *Dispatcher) decidedElsewhere(key store.Key, id string) bool {
	recs, err := d.opts.Store.Approvals(false)
	if err != nil {
		return false
	}
	for _, r := range recs {
		if r.ID == id && r.Key == key && r.Decision != "" {
			return true
		}
	}
	return false
}

func (d *Dispatcher) decideHere(key store.Key, id, decision string, option int) ActionResult {
	ans := engine.PermissionAnswer{Decision: engine.Decision(decision)}
	d.approvals.mu.Lock()
	r := d.approvals.pending[id]
	switch {
	case r == nil:
		at, ok := d.approvals.decided[id]
		d.approvals.mu.Unlock()
		if ok && at.where == where(key.Platform, key.Workspace, key.Channel) {
			return ActionResult{Refusal: refusal(ErrDecided), Err: ErrDecided}
		}
		return ActionResult{Refusal: refusal(ErrUnknownRequest), Err: ErrUnknownRequest}
	case r.rec.Key != key:
		d.approvals.mu.Unlock()
		return ActionResult{Refusal: refusal(ErrUnknownRequest), Err: ErrUnknownRequest}
	}
	if option >= 0 {
		answers, ok := pickAnswers(r.questions, strconv.Itoa(option))
		if !ok || ans.Decision != engine.Allow {
			d.approvals.mu.Unlock()
			return ActionResult{Refusal: "no such option", Err: ErrUnknownRequest}
		}
		ans.Answers = answers
	}
	d.approvals.take(r)
	d.approvals.mu.Unlock()
	return ActionResult{Settled: d.settle(r, ans, Operator, store.ApprovalAnswered, Operator, "")}
}

// tap is a running turn's answer as the operator's view watches it: the
// text so far and the watchers of what comes next. Its sinks are called
// under mu, from the turn's goroutine, and must not block.
type tap struct {
	mu       sync.Mutex
	text     []byte // the answer's text so far, its last maxTapText bytes
	cut      bool   // text lost its beginning
	watchers map[int]func(...parser.Event)
	next     int
	ended    bool
}

// maxTapText bounds the text a tap keeps for a watcher joining late: an
// answer longer than that is joined with its last part, after "…".
const maxTapText = 1 << 20

func (t *tap) publish(evs ...parser.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ev := range evs {
		if ev.Type == parser.Text {
			t.text = append(t.text, ev.Content...)
			if over := len(t.text) - maxTapText; over > 0 {
				for over < len(t.text) && !utf8.RuneStart(t.text[over]) {
					over++
				}
				t.text = append(t.text[:0], t.text[over:]...)
				t.cut = true
			}
		}
		if ev.Terminal() {
			t.ended = true
		}
	}
	for _, w := range t.watchers {
		w(evs...)
	}
	if t.ended {
		t.watchers = nil
	}
}

// tapped has out's events also go to the tap of c's running turn.
func (d *Dispatcher) tapped(c *conversation, out turnOutput) turnOutput {
	t := &tap{watchers: map[int]func(...parser.Event){}}
	c.mu.Lock()
	if c.running != nil {
		c.running.tap = t
	}
	c.mu.Unlock()
	add, finish := out.add, out.finish
	out.add = func(evs ...parser.Event) {
		add(evs...)
		t.publish(evs...)
	}
	out.finish = func(ev parser.Event, notice string, back handback) {
		finish(ev, notice, back)
		t.publish(ev)
	}
	return out
}

// Watch joins key's running answer: sink gets at once one text event with
// the answer's text so far (when there is any), then every event of the
// answer as it comes, ending with its terminal event. sink must not block.
// ok is false when no answer runs here; stop ends the watch early.
func (d *Dispatcher) Watch(key store.Key, sink func(...parser.Event)) (stop func(), ok bool) {
	c := d.find(key)
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	var t *tap
	if c.running != nil {
		t = c.running.tap
	}
	c.mu.Unlock()
	if t == nil {
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return nil, false
	}
	if len(t.text) > 0 {
		text := string(t.text)
		if t.cut {
			text = "…" + text
		}
		sink(parser.Event{Type: parser.Text, Content: text})
	}
	id := t.next
	t.next++
	t.watchers[id] = sink
	return func() {
		t.mu.Lock()
		delete(t.watchers, id)
		t.mu.Unlock()
	}, true
}

// turnRecord is the turn's record for the operator's view: who, when, how
// it ended, how long, what it cost; never its text.
func (d *Dispatcher) turnRecord(key store.Key, m Message, terminal parser.Event, start time.Time) *store.TurnRecord {
	u := turnUsage(terminal, time.Since(start))
	return &store.TurnRecord{ID: newID(), Key: key, By: userOf(m), Started: start, Outcome: outcome(terminal),
		DurationMS: u.DurationMS, CostUSD: u.CostUSD, Tokens: u.Tokens()}
}
