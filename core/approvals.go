package core

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/store"
)

// Permissions is the approval policy: permissions: in bot.yaml.
type Permissions struct {
	// Mode is the default permissions mode; "" is engine.ModeAsk. A
	// channel's Override.Permissions wins over it.
	Mode engine.Mode
	// Approvers may answer any request besides the person whose message
	// started the turn: "platform:user", "platform:*" or "*". On a trusted
	// platform (Options.Trusted) everyone may answer.
	Approvers []string
	// Timeout denies a request nobody answered; default 10m.
	Timeout time.Duration
}

// The errors an ActionResult wraps.
var (
	// ErrUnknownRequest: no such request is waiting in this conversation
	// (a wrong id, or one of another conversation).
	ErrUnknownRequest = errors.New("no such permission request here")
	// ErrDecided: the request was already decided; the first answer won.
	ErrDecided = errors.New("the permission request was already decided")
	// ErrNotApprover: the clicker is neither the asker nor an approver.
	ErrNotApprover = errors.New("only the asker or an approver can answer")
)

// request is one permission request waiting for an answer. Guarded by
// approvals.mu until it is taken out of the map to be decided.
type request struct {
	rec       store.Approval
	run       *engine.Run
	cliID     string // the engine's id of the request
	questions []parser.Question
	asker     string // "platform:user"
	platform  string
	workspace string
	channel   string
	sink      func(...parser.Event) // a stream's, or nil
	poster    Poster                // where the question was posted, or nil
	question  MessageRef            // the posted question, once known
	timer     *time.Timer
	turn      *askState
}

// approvals holds the requests waiting for an answer, by golem's id, and
// where the ones decided lately were asked, so that a late click is told
// it came too late.
type approvals struct {
	mu      sync.Mutex
	pending map[string]*request
	decided map[string]decidedAt // by id
}

// maxDecided bounds approvals.decided; past it the oldest answers are
// forgotten (a late click on them is then "no such request").
const maxDecided = 4096

// decidedAt is where a decided request was asked: its conversation's
// platform, workspace and channel, and its question's message id.
type decidedAt struct{ where, question string }

func where(platform, workspace, channel string) string {
	return platform + "\x00" + workspace + "\x00" + channel
}

// askState is what a turn knows for the requests of its run.
type askState struct {
	m            Message
	key          store.Key
	mode         engine.Mode
	run          *engine.Run
	anchor       func() MessageRef // turnOutput.anchor
	planApproved atomic.Bool       // plan mode: ExitPlanMode was allowed
}

// askPermission takes a permission_request event of a turn's run: it
// records it, shows it (buttons where the poster is an Asker, else a text
// naming /allow and /deny; a stream gets the event) and arms the timeout.
// It never waits for the platform: the post goes through the
// conversation's answers.
func (d *Dispatcher) askPermission(st *askState, ev parser.Event) {
	r := &request{
		run: st.run, cliID: ev.ID, questions: ev.Questions(),
		asker: st.m.Platform + ":" + st.m.User, platform: st.m.Platform,
		workspace: st.m.Workspace, channel: st.m.Channel, sink: st.m.Sink, turn: st,
	}
	r.rec = store.Approval{
		ID: newShortID(), Key: st.key, Platform: st.m.Platform, Tool: ev.Name,
		ArgsDigest: digest(ev.Args), AskedBy: r.asker, Asked: time.Now(),
	}
	log := d.log.With("conversation", st.key, "permission", r.rec.ID, "tool", ev.Name)
	log.Info("permission requested", "args_digest", r.rec.ArgsDigest)
	if err := d.opts.Store.SaveApproval(r.rec); err != nil {
		log.Error("record permission request", "err", err)
	}
	if st.mode == engine.ModePlan && !st.planApproved.Load() && ev.Name != parser.ExitPlanMode && ev.Name != parser.AskUserQuestion {
		// Plan mode: the agent may only read and plan until its plan is
		// approved; what the CLI asks meanwhile is refused without asking.
		d.settle(r, engine.PermissionAnswer{Decision: engine.Deny,
			Message: "golem runs this conversation in plan mode: only read and plan, then propose the plan with ExitPlanMode."},
			"golem", store.ApprovalPlanMode, "", "")
		return
	}
	d.approvals.mu.Lock()
	if d.approvals.pending == nil {
		d.approvals.pending = map[string]*request{}
	}
	d.approvals.pending[r.rec.ID] = r
	r.timer = time.AfterFunc(d.opts.Permissions.Timeout, func() {
		d.decide(r.rec.ID, nil, engine.PermissionAnswer{Decision: engine.Deny,
			Message: "Nobody answered in time; the request was denied."}, "golem", store.ApprovalTimedOut)
	})
	d.approvals.mu.Unlock()

	if st.m.Sink != nil {
		out := ev
		out.ID = r.rec.ID
		st.m.Sink(out)
		return
	}
	q := Question{ID: r.rec.ID, Place: d.place(st.m), Text: questionText(ev, r.rec.ID, false), Choices: choices(ev, r.rec.ID)}
	m := st.m
	d.answers.Put(st.key, func() {
		q.Answer = st.anchor() // under the answer, after what the agent said before it asked
		d.postQuestion(m, r, q, ev)
	})
}

// postQuestion posts a request's question to the platform its turn runs on.
func (d *Dispatcher) postQuestion(m Message, r *request, q Question, ev parser.Event) {
	p := d.poster(m.Platform)
	if p == nil {
		return
	}
	var ref MessageRef
	var err error
	if a, ok := p.(Asker); ok {
		ref, err = a.Ask(d.life, q)
	} else {
		text := questionText(ev, r.rec.ID, true)
		if q.Answer.ID != "" {
			err = p.SendActivity(d.life, q.Answer, text)
			ref = MessageRef{Channel: q.Answer.Channel, Thread: q.Answer.Thread} // where the outcome goes too
		} else {
			ref, err = p.Send(d.life, q.Place, text)
		}
	}
	if err != nil {
		d.log.Warn("post permission request", "platform", m.Platform, "permission", r.rec.ID, "err", err)
		return
	}
	d.approvals.mu.Lock()
	decided := d.approvals.pending[r.rec.ID] == nil
	r.poster, r.question = p, ref
	d.approvals.mu.Unlock()
	if decided {
		return // decided while it was being posted; the decision says so
	}
	rec := r.rec
	rec.Channel, rec.Thread, rec.Message = ref.Channel, ref.Thread, ref.ID
	if err := d.opts.Store.SaveApproval(rec); err != nil {
		d.log.Error("record permission question", "permission", rec.ID, "err", err)
	}
}

// HandleAction implements Handler: a click on a question's button.
func (d *Dispatcher) HandleAction(ctx context.Context, a Action) ActionResult {
	if a.EventID != "" {
		if first, err := d.opts.Store.MarkSeen(a.Platform+":"+a.EventID, SeenTTL); err == nil && !first {
			return ActionResult{Refusal: "This was already answered.", Err: ErrDecided}
		}
	}
	res := d.handleAction(ctx, a)
	if errors.Is(res.Err, ErrUnknownRequest) && d.opts.Cluster != nil {
		if verb, _, _, ours := parseActionData(a.Data); ours && !strings.HasPrefix(verb, operatorVerb) { // a platform's click never acts as the operator
			if fwd, ok := d.opts.Cluster.Forward(ctx, a); ok {
				return fwd // a turn on another replica waited for it
			}
		}
	}
	return res
}

// handleAction answers a click here, HandleAction's dedupe done.
func (d *Dispatcher) handleAction(_ context.Context, a Action) ActionResult {
	verb, id, rest, ok := parseActionData(a.Data)
	if !ok {
		return ActionResult{Refusal: "This button is not golem's.", Err: ErrUnknownRequest}
	}
	if verb == "resume" {
		return d.resumeAction(a, id)
	}
	if scheduleVerbs[verb] {
		return d.scheduleAction(a, verb, id)
	}
	who := a.Platform + ":" + a.User
	ans := engine.PermissionAnswer{}
	switch verb {
	case "allow":
		ans.Decision = engine.Allow
	case "session":
		ans.Decision = engine.AllowSession
	case "deny":
		ans.Decision = engine.Deny
	case "pick":
		ans.Decision = engine.Allow
	default:
		return ActionResult{Refusal: "This button is not golem's.", Err: ErrUnknownRequest}
	}
	from := &actor{platform: a.Platform, workspace: a.Workspace, channel: a.Channel, user: a.User, name: a.UserName, question: a.Question}
	if verb == "pick" {
		from.pick = rest
	}
	settled, err := d.decide(id, from, ans, who, store.ApprovalAnswered)
	if err != nil {
		return ActionResult{Refusal: refusal(err), Err: err}
	}
	return ActionResult{Settled: settled}
}

// actor is who answers a request, and from where; nil is golem itself
// (a timeout, /stop, the end of the turn).
type actor struct {
	platform, workspace, channel, user, name string
	question                                 MessageRef // the clicked question
	pick                                     string     // AskUserQuestion: the option's index
	command                                  bool       // a text command, answered with the outcome
}

// decide answers the request id for who. The first answer wins: a request
// already decided, or unknown in the actor's conversation, is an error, as
// is an actor who is neither the asker nor an approver. The agent gets
// the answer before decide returns; the record, the log and the
// question's update follow off the caller's goroutine. It returns the
// question's new text.
func (d *Dispatcher) decide(id string, from *actor, ans engine.PermissionAnswer, who string, reason store.ApprovalEnd) (string, error) {
	d.approvals.mu.Lock()
	r := d.approvals.pending[id]
	switch {
	case r == nil:
		at, ok := d.approvals.decided[id]
		d.approvals.mu.Unlock()
		if ok && (from == nil || at.where == where(from.platform, from.workspace, from.channel) ||
			from.question.ID != "" && from.question.ID == at.question) {
			return "", ErrDecided
		}
		return "", ErrUnknownRequest
	case from != nil && (r.platform != from.platform || r.workspace != from.workspace ||
		r.channel != from.channel && (from.question.ID == "" || r.question.ID != "" && from.question != r.question)):
		// A click on the question itself belongs, wherever the platform
		// shows it (a Discord thread is a channel of its own), also while
		// its post has not returned yet (r.question unknown): the
		// platform showed it, and delivers clicks on its buttons, before
		// golem reads the answer to the post, and only that message
		// carries this request's buttons.
		d.approvals.mu.Unlock()
		return "", ErrUnknownRequest
	case from != nil && !d.mayAnswer(r, from):
		d.approvals.mu.Unlock()
		return "", ErrNotApprover
	}
	if from != nil && from.pick != "" {
		answers, ok := pickAnswers(r.questions, from.pick)
		if !ok {
			d.approvals.mu.Unlock()
			return "", ErrUnknownRequest
		}
		ans.Answers = answers
	}
	d.approvals.take(r)
	d.approvals.mu.Unlock()

	name, via := who, ""
	if from != nil {
		name = cmp.Or(from.name, from.user)
		switch {
		case from.command:
			via = viaCommand
		case from.question.ID != "": // its source settles the clicked question
			via = viaClick
		}
	}
	return d.settle(r, ans, name, reason, who, via), nil
}

// How a decision came, when it shows its outcome itself.
const (
	viaClick   = "click"   // on the question: its source settles it
	viaCommand = "command" // /allow or /deny: answered with the outcome
)

// settle sends the answer to the agent, then records, logs and shows it:
// a stream gets the decision event; a question with buttons is settled,
// unless the click on it decided; without buttons, the outcome is posted,
// unless a text command decided (its answer is the outcome).
func (d *Dispatcher) settle(r *request, ans engine.PermissionAnswer, name string, reason store.ApprovalEnd, who, via string) string {
	return d.settleFor(d.life, r, ans, name, reason, who, via)
}

// settleFor is settle with the context the answer to the run is given
// under: a run that has ended gets a done one, so an in-process run that
// no longer takes answers never holds its turn up.
func (d *Dispatcher) settleFor(ctx context.Context, r *request, ans engine.PermissionAnswer, name string, reason store.ApprovalEnd, who, via string) string {
	ans.ID = r.cliID
	if r.rec.Tool == parser.ExitPlanMode && ans.Decision != engine.Deny {
		r.turn.planApproved.Store(true)
	}
	if r.sink != nil && reason != store.ApprovalPlanMode {
		// Before the agent has the answer, so that a stream shows the
		// decision before what the agent does with it, and before its end.
		r.sink(parser.Event{Type: parser.PermissionDecision, ID: r.rec.ID, Permission: &parser.Permission{Decision: string(ans.Decision)}})
	}
	err := r.run.Respond(ctx, ans)
	if who == "" {
		who = name
	}
	rec := r.rec
	rec.Decision, rec.Reason, rec.DecidedBy, rec.Decided = string(ans.Decision), reason, who, time.Now()
	text := decisionText(rec, ans, name, d.opts.Permissions.Timeout)
	log := d.log.With("conversation", rec.Key, "permission", rec.ID, "tool", rec.Tool)
	if err != nil && ctx.Err() == nil {
		log.Warn("answer permission request", "err", err) // the run ended meanwhile
	}
	log.Info("permission decided", "decision", rec.Decision, "reason", reason, "by", who,
		"wait_ms", rec.Decided.Sub(rec.Asked).Milliseconds())
	d.meter.Approval(rec.Decision, string(reason))
	d.answers.Put(rec.Key, func() {
		if err := d.opts.Store.SaveApproval(rec); err != nil {
			log.Error("record permission decision", "err", err)
		}
		asker, buttons := r.poster.(Asker)
		switch {
		case r.sink != nil:
		case buttons && r.question.ID != "":
			if via == viaClick {
				return
			}
			if err := asker.Settle(d.life, r.question, text); err != nil {
				log.Warn("settle permission question", "err", err)
			}
		case via == viaCommand, reason == store.ApprovalPlanMode:
		default:
			if p := d.poster(rec.Platform); p != nil {
				if _, err := p.Send(d.life, Place{Channel: r.channel, Thread: r.question.Thread}, text); err != nil {
					log.Warn("post permission decision", "err", err)
				}
			}
		}
	})
	return text
}

// mayAnswer reports whether from may answer r: its asker, an approver, or
// anyone on a trusted platform. Called with approvals.mu held.
func (d *Dispatcher) mayAnswer(r *request, from *actor) bool {
	who := from.platform + ":" + from.user
	if who == r.asker || slices.Contains(d.opts.Trusted, from.platform) {
		return true
	}
	for _, a := range d.opts.Permissions.Approvers {
		if a == "*" || a == from.platform+":*" || a == who {
			return true
		}
	}
	return false
}

// take removes r from the pending requests, to be decided now. Called
// with mu held.
func (a *approvals) take(r *request) {
	delete(a.pending, r.rec.ID)
	r.timer.Stop()
	if a.decided == nil || len(a.decided) >= maxDecided {
		a.decided = map[string]decidedAt{}
	}
	a.decided[r.rec.ID] = decidedAt{where(r.platform, r.workspace, r.channel), r.question.ID}
}

// endRequests denies what a turn's run still has pending when the turn
// ends or is stopped, and says so.
func (d *Dispatcher) endRequests(run *engine.Run, key store.Key, reason store.ApprovalEnd) {
	d.approvals.mu.Lock()
	var mine []*request
	for _, r := range d.approvals.pending {
		if (run != nil && r.run == run) || (run == nil && r.rec.Key == key) {
			mine = append(mine, r)
		}
	}
	for _, r := range mine {
		d.approvals.take(r)
	}
	d.approvals.mu.Unlock()
	ctx := d.life
	if run != nil { // the run has ended
		done, cancel := context.WithCancel(d.life)
		cancel()
		ctx = done
	}
	for _, r := range mine {
		d.settleFor(ctx, r, engine.PermissionAnswer{Decision: engine.Deny, Message: "The turn was stopped."}, "golem", reason, "", "")
	}
}

// pendingText lists a conversation's waiting requests for /status.
func (d *Dispatcher) pendingText(key store.Key) string {
	d.approvals.mu.Lock()
	defer d.approvals.mu.Unlock()
	var lines []string
	for _, r := range d.approvals.pending {
		if r.rec.Key == key {
			lines = append(lines, fmt.Sprintf("• `%s` %s, asked %s ago — `/allow %s` · `/deny %s`", r.rec.ID, r.rec.Tool,
				time.Since(r.rec.Asked).Round(time.Second), r.rec.ID, r.rec.ID))
		}
	}
	if len(lines) == 0 {
		return ""
	}
	slices.Sort(lines)
	return "\n**Waiting for approval:**\n" + strings.Join(lines, "\n")
}

// answerCommand runs /allow ID [session] and /deny ID [reason].
func (d *Dispatcher) answerCommand(m Message, name, args string) string {
	id, rest, _ := strings.Cut(strings.TrimSpace(args), " ")
	if id == "" {
		return "Say which request: `/" + name + " ID` (`/status` lists them)."
	}
	ans := engine.PermissionAnswer{Decision: engine.Allow}
	switch {
	case name == "deny":
		ans.Decision = engine.Deny
		if rest = strings.TrimSpace(rest); rest != "" {
			ans.Message = "Denied: " + rest
		}
	case strings.TrimSpace(rest) == "session":
		ans.Decision = engine.AllowSession
	}
	from := &actor{platform: m.Platform, workspace: m.Workspace, channel: m.Channel, user: m.User, name: m.UserName, command: true}
	text, err := d.decide(id, from, ans, m.Platform+":"+m.User, store.ApprovalAnswered)
	if err != nil {
		return refusal(err)
	}
	return text
}

func refusal(err error) string {
	switch {
	case errors.Is(err, ErrNotApprover):
		return "Only the asker or an approver can answer this."
	case errors.Is(err, ErrDecided):
		return "This was already answered."
	default:
		return "There is no such request waiting here."
	}
}

// parseActionData splits a Choice's Data: "golem:VERB:ID[:REST]".
func parseActionData(data string) (verb, id, rest string, ok bool) {
	parts := strings.SplitN(data, ":", 4)
	if len(parts) < 3 || parts[0] != "golem" || parts[2] == "" {
		return "", "", "", false
	}
	if len(parts) == 4 {
		rest = parts[3]
	}
	return parts[1], parts[2], rest, true
}

// pickAnswers is the AskUserQuestion answer for option index pick of its
// first question.
func pickAnswers(qs []parser.Question, pick string) (map[string]string, bool) {
	i, err := strconv.Atoi(pick)
	if err != nil || len(qs) == 0 || i < 0 || i >= len(qs[0].Options) {
		return nil, false
	}
	return map[string]string{qs[0].Question: qs[0].Options[i].Label}, true
}

func digest(args []byte) string {
	sum := sha256.Sum256(args)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// newShortID is a request id short enough to type after /allow.
func newShortID() string { return newID()[:8] }

// expireApprovals settles the requests of platform that an earlier golem
// left undecided (it stopped while they waited; their turns end as
// interrupted): each is recorded as denied, reason expired, and its
// question, where one was posted and p can settle it, says so.
func (d *Dispatcher) expireApprovals(platform string, p Poster) {
	recs, err := d.opts.Store.Approvals(true)
	if err != nil {
		d.log.Error("read undecided permission requests", "err", err)
		return
	}
	var mine []store.Approval
	for _, rec := range recs {
		if rec.Platform == platform {
			rec.Decision, rec.Reason, rec.DecidedBy, rec.Decided = string(engine.Deny), store.ApprovalExpired, "golem", time.Now()
			mine = append(mine, rec)
		}
	}
	if len(mine) == 0 {
		return
	}
	d.workers.Add(1)
	go func() {
		defer d.workers.Done()
		for _, rec := range mine {
			if a, ok := p.(Asker); ok && rec.Message != "" {
				text := decisionText(rec, engine.PermissionAnswer{Decision: engine.Deny}, "golem", d.opts.Permissions.Timeout)
				if err := a.Settle(d.life, MessageRef{Channel: rec.Channel, Thread: rec.Thread, ID: rec.Message}, text); err != nil {
					d.log.Warn("settle expired permission question", "permission", rec.ID, "err", err)
				}
			}
			if err := d.opts.Store.SaveApproval(rec); err != nil {
				d.log.Error("record expired permission request", "permission", rec.ID, "err", err)
			}
			d.log.Info("permission decided", "conversation", rec.Key, "permission", rec.ID, "tool", rec.Tool,
				"decision", rec.Decision, "reason", rec.Reason, "by", rec.DecidedBy)
		}
	}()
}
