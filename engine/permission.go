package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/golem-chat/golem/parser"
)

// Mode is how much an agent may do without asking: the permissions.mode
// of bot.yaml and its per-channel override.
type Mode string

const (
	// ModeAsk: what the CLI would ask about (writes, edits, commands that
	// are not read-only) waits for an answer; read-only tools run. The
	// zero Mode is ModeAsk.
	ModeAsk Mode = "ask"
	// ModeAcceptEdits: file edits run; the rest is asked.
	ModeAcceptEdits Mode = "accept-edits"
	// ModePlan: the agent may only read and plan; leaving plan mode
	// (parser.ExitPlanMode) is asked.
	ModePlan Mode = "plan"
	// ModeBypass: the agent runs everything with full permissions.
	ModeBypass Mode = "bypass"
)

// Modes lists every mode, the default first.
var Modes = []Mode{ModeAsk, ModeAcceptEdits, ModePlan, ModeBypass}

// ParseMode returns the mode named s; "" is ModeAsk.
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return ModeAsk, nil
	}
	if m := Mode(s); slices.Contains(Modes, m) {
		return m, nil
	}
	return "", fmt.Errorf("%q is not ask, accept-edits, plan or bypass", s)
}

// orAsk is m with the zero value read as ModeAsk.
func (m Mode) orAsk() Mode {
	if m == "" {
		return ModeAsk
	}
	return m
}

// ErrMode is wrapped by Run, and by Spec.CheckMode, when an engine cannot
// honour a turn's permissions mode: golem never runs such a turn in bypass
// instead.
var ErrMode = errors.New("permissions mode not supported")

// Honours reports whether the engine can run turns in mode m; every engine
// honours ModeBypass.
func (s Spec) Honours(m Mode) bool {
	m = m.orAsk()
	return m == ModeBypass || slices.Contains(s.Capabilities.PermissionModes, string(m))
}

// HonouredModes lists the modes the engine honours, ModeBypass last.
func (s Spec) HonouredModes() []Mode {
	var out []Mode
	for _, m := range Modes {
		if s.Honours(m) {
			out = append(out, m)
		}
	}
	return out
}

// CheckMode returns nil when the engine honours m, else an error wrapping
// ErrMode that names the engine and the modes it honours.
func (s Spec) CheckMode(m Mode) error {
	if s.Honours(m) {
		return nil
	}
	var names []string
	for _, h := range s.HonouredModes() {
		names = append(names, string(h))
	}
	return fmt.Errorf("engine %s cannot honour %q: %w (it honours %s)", s.Name, m.orAsk(), ErrMode, strings.Join(names, ", "))
}

// Decision is the answer to a permission request.
type Decision string

const (
	Allow Decision = "allow"
	// AllowSession allows and applies the CLI's own suggestions (with
	// Claude Code: for the rest of the session, e.g. accept edits), so the
	// same kind of request is not asked again in that session.
	AllowSession Decision = "allow_session"
	Deny         Decision = "deny"
)

// ParseDecision returns the decision named s.
func ParseDecision(s string) (Decision, error) {
	switch d := Decision(s); d {
	case Allow, AllowSession, Deny:
		return d, nil
	}
	return "", fmt.Errorf("%q is not allow, allow_session or deny", s)
}

// PermissionAnswer answers a parser.PermissionRequest event by its ID.
type PermissionAnswer struct {
	ID       string
	Decision Decision
	// Message tells the agent why it was denied; empty gives a default.
	Message string
	// Answers are an AskUserQuestion's answers, question text → the chosen
	// option's label (several labels joined by ", "); they go with an
	// allow.
	Answers map[string]string
}

// ErrNotPending is returned by Respond for a request id the run is not
// waiting on: unknown, already answered, or the run has ended.
var ErrNotPending = errors.New("no such pending permission request")

// Respond answers a permission request of this run. An answer for an id
// the run is not waiting on returns an error wrapping ErrNotPending; the
// first answer to a request is the one the agent gets. For a CLI it
// writes the answer to the CLI's stdin and returns once written; for an
// in-process run it waits until the producer takes it from Answers or ctx
// is done. Safe for concurrent use.
func (r *Run) Respond(ctx context.Context, a PermissionAnswer) error {
	if r.control != nil {
		return r.control.answer(a)
	}
	select {
	case r.answers <- a:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Answers delivers what Respond is given, for in-process runs (NewRun); a
// CLI's run never sends on it.
func (r *Run) Answers() <-chan PermissionAnswer { return r.answers }

// control is the two-way side of a Claude Code run with
// --input-format stream-json: user messages and control responses go to
// the CLI's stdin as JSON lines, one write each, under one lock.
//
// It also keeps count of the user messages of the current process: those
// written (the prompt and each steered one) and those the CLI took in
// (replayed on stdout, parser.UserMessage). A result line ends the run
// only when every message written has been taken in; a message taken in
// later gets a turn and a result line of its own (see Run.Steer).
type control struct {
	mu      sync.Mutex
	w       io.WriteCloser
	closed  bool
	pending map[string]pendingRequest

	written, taken int
	sent           bool     // the prompt is written; steered lines wait in backlog until then
	backlog        [][]byte // steered lines waiting for the prompt
	steered        [][]byte // every steered line of the run, for a second process
}

type pendingRequest struct {
	input       json.RawMessage
	suggestions json.RawMessage
}

func newControl(w io.WriteCloser) *control {
	return &control{w: w, pending: map[string]pendingRequest{}}
}

// userMessage is the stream-json user message carrying prompt.
func userMessage(prompt string) []byte {
	b, _ := json.Marshal(map[string]any{
		"type":    "user",
		"message": map[string]string{"role": "user", "content": prompt},
	})
	return append(b, '\n')
}

// reset makes w, the stdin of a new process of the run, the channel: its
// first message is the prompt, followed by every message steered into the
// run so far (the process before ended without answering them).
func (c *control) reset(w io.WriteCloser) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.w, c.closed, c.pending = w, false, map[string]pendingRequest{}
	c.written, c.taken, c.sent = 1+len(c.steered), 0, false
	c.backlog = append([][]byte(nil), c.steered...)
}

// sendPrompt writes the prompt, then the steered lines that waited for it,
// unless w was closed or replaced meanwhile.
func (c *control) sendPrompt(w io.WriteCloser, prompt []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w != w {
		return
	}
	c.sent = true
	lines := append([][]byte{prompt}, c.backlog...)
	c.backlog = nil
	for _, line := range lines {
		if c.writeLocked(line) != nil {
			return // the CLI is gone; its run ends with what it said
		}
	}
}

func (c *control) writeLocked(line []byte) error {
	if c.closed {
		return fmt.Errorf("write to the agent: %w", ErrNotPending)
	}
	if _, err := c.w.Write(line); err != nil {
		return fmt.Errorf("write to the agent: %w", err)
	}
	return nil
}

// steer writes a user message for the CLI to take in while it runs.
func (c *control) steer(line []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("steer: %w", ErrNotSteerable)
	}
	if c.sent {
		if _, err := c.w.Write(line); err != nil {
			return fmt.Errorf("steer: %w: %w", ErrNotSteerable, err)
		}
	} else {
		c.backlog = append(c.backlog, line)
	}
	c.written++
	c.steered = append(c.steered, line)
	return nil
}

// took counts a user message the CLI took in.
func (c *control) took() {
	c.mu.Lock()
	c.taken++
	c.mu.Unlock()
}

// endTurn is called at a result line. When every message written has been
// taken in, the run ends there: stdin is closed (as close does) and
// endTurn reports true. Otherwise the CLI answers the rest in a turn of its
// own and stdin stays open for that turn's permission answers; also when
// stdin is closed already (the CLI exited while its output is still being
// read, or steerGrace passed): what it printed after this line is read, and
// the run ends with the CLI's last word or its exit.
func (c *control) endTurn() bool {
	c.mu.Lock()
	if c.taken < c.written {
		c.mu.Unlock()
		return false
	}
	c.mu.Unlock()
	c.close()
	return true
}

// takenCount is the number of messages the CLI took in so far.
func (c *control) takenCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.taken
}

// untaken is how many steered messages of the current process the CLI did
// not take in: the prompt counts among the written and the taken, but is
// not a steered message.
func (c *control) untaken() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(min(c.written-c.taken, c.written-1), 0)
}

// asked records a permission request the CLI waits on.
func (c *control) asked(ev parser.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.pending[ev.ID] = pendingRequest{input: ev.Args, suggestions: ev.Suggestions()}
	}
}

// close closes stdin once: after the run's result line, or when the
// process has ended. Pending requests can no longer be answered.
func (c *control) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		c.pending = nil
		c.w.Close()
	}
}

// answer writes the control_response for a pending request.
func (c *control) answer(a PermissionAnswer) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	req, ok := c.pending[a.ID]
	if !ok || c.closed {
		return fmt.Errorf("answer %s: %w", a.ID, ErrNotPending)
	}
	line, err := controlResponse(a, req)
	if err != nil {
		return err
	}
	delete(c.pending, a.ID)
	return c.writeLocked(line)
}

// controlResponse encodes Claude Code's answer to a can_use_tool request:
// allow with updatedInput (the request's input, plus AskUserQuestion's
// answers), allow for the session with updatedPermissions (the CLI's own
// suggestions, each scoped to the session, so that nothing is written to
// the workspace's settings files), or deny with a message.
func controlResponse(a PermissionAnswer, req pendingRequest) ([]byte, error) {
	var resp map[string]any
	switch a.Decision {
	case Allow, AllowSession:
		input := req.input
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		if len(a.Answers) > 0 {
			var in map[string]any
			if err := json.Unmarshal(input, &in); err != nil || in == nil {
				in = map[string]any{}
			}
			in["answers"] = a.Answers
			b, err := json.Marshal(in)
			if err != nil {
				return nil, fmt.Errorf("answer %s: %w", a.ID, err)
			}
			input = b
		}
		resp = map[string]any{"behavior": "allow", "updatedInput": input}
		if a.Decision == AllowSession && len(req.suggestions) > 0 {
			resp["updatedPermissions"] = sessionScoped(req.suggestions)
		}
	case Deny:
		msg := a.Message
		if msg == "" {
			msg = "The user denied this."
		}
		resp = map[string]any{"behavior": "deny", "message": msg}
	default:
		return nil, fmt.Errorf("answer %s: unknown decision %q", a.ID, a.Decision)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // ends the line with '\n'
	enc.SetEscapeHTML(false)
	err := enc.Encode(map[string]any{
		"type":     "control_response",
		"response": map[string]any{"subtype": "success", "request_id": a.ID, "response": resp},
	})
	if err != nil {
		return nil, fmt.Errorf("answer %s: %w", a.ID, err)
	}
	return buf.Bytes(), nil
}

// sessionScoped returns the suggestions with every destination set to
// "session": the CLI proposes some for localSettings, which it would keep
// in the workspace for good.
func sessionScoped(suggestions json.RawMessage) json.RawMessage {
	var list []map[string]any
	if json.Unmarshal(suggestions, &list) != nil {
		return suggestions
	}
	for _, s := range list {
		if _, ok := s["destination"]; ok {
			s["destination"] = "session"
		}
	}
	b, err := json.Marshal(list)
	if err != nil {
		return suggestions
	}
	return b
}

// attach makes p's stdin the run's control channel and writes the prompt
// there, when p is an interactive CLI; a second process of the run (the
// resume fallback) replaces the first, which has ended, and gets the
// messages steered into the first one after its prompt.
func (r *Run) attach(p *process) {
	if p.stdin == nil {
		return
	}
	if r.control == nil {
		r.control = newControl(p.stdin)
		r.control.written = 1
	} else {
		r.control.reset(p.stdin)
	}
	c, w, line := r.control, p.stdin, userMessage(p.prompt)
	go c.sendPrompt(w, line) // a long prompt may fill the pipe before the CLI reads it
}

// asked records a permission request the CLI waits on.
func (r *Run) asked(ev parser.Event) {
	if r.control != nil {
		r.control.asked(ev)
	}
}

// endInput closes an interactive CLI's stdin: after its terminal line,
// or once it exited.
func (r *Run) endInput() {
	if r.control != nil {
		r.control.close()
	}
}
