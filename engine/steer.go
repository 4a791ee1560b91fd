package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/golem-chat/golem/parser"
)

// ErrNotSteerable is wrapped by Steer when the run can no longer take a
// message: its engine cannot steer (Capabilities.Steering), the run has
// ended or is ending (its last result line is parsed, it was stopped), or
// the CLI is gone. The caller keeps the message for a turn of its own.
var ErrNotSteerable = errors.New("the run takes no more messages")

// Steer sends a user message into the running turn: text, with the
// attached files named as in Turn.Files. A nil error means the CLI has the
// message and its answer comes in this run's events:
//
//   - taken in before the agent's next model request of the turn, the
//     message is part of that request (Claude Code adds it as "The user
//     sent a new message while you were working: ..."), and the turn's one
//     result line answers both;
//   - arriving during the turn's last model step, or after it, it gets a
//     turn of its own in the same session, with a result line of its own:
//     the run then does not end at the first result line but at the last,
//     whose done carries the whole run's duration, turns and tokens. An
//     error result before the last becomes a warning; a CLI that exits
//     failing (or without a result) in a later turn ends the run with
//     that failure, not with the done before it.
//
// The run tells the two apart by the CLI's replay of each message it takes
// in (--replay-user-messages): a result line ends the run once every
// message written has been taken in. Should the CLI stay silent
// steerGrace after a result line that more messages follow, its stdin is
// closed; it then answers what it has read and exits.
//
// An error wraps ErrNotSteerable, and the message has not reached the CLI.
// Safe for concurrent use with Next, Respond and other Steers; messages
// reach the CLI in the order Steer was called.
func (r *Run) Steer(text string, files []string) error {
	if r.control == nil {
		return fmt.Errorf("steer: %w: the engine takes no input while it runs", ErrNotSteerable)
	}
	if r.ctx.Err() != nil {
		return fmt.Errorf("steer: %w: the run was stopped", ErrNotSteerable)
	}
	return r.control.steer(userMessage(prompt(Turn{Prompt: text, Files: files})))
}

// steerGrace is how long a CLI may stay silent after a result line that
// more steered messages follow before its stdin is closed (the real CLI
// starts the next turn within milliseconds).
var steerGrace = 5 * time.Second

// took counts a user message the CLI took in (parser.UserMessage).
func (r *Run) took() {
	if r.control != nil {
		r.control.took()
	}
}

// Untaken is how many of the messages steered into the run (the last ones
// Steer took) its CLI had not taken in when the run ended: a stop, a
// timeout or a crash came before the CLI read them, so their answer never
// comes in this run. Read it once Exited is closed; before, it may still
// fall.
func (r *Run) Untaken() int {
	if r.control == nil {
		return 0
	}
	return r.control.untaken()
}

// takenCount is the number of messages the CLI of the run took in so far.
func (r *Run) takenCount() int {
	if r.control == nil {
		return 0
	}
	return r.control.takenCount()
}

// endTurn reports whether a result line ends the run: always for a run
// that takes no input, else when the CLI has taken in every message
// written to it (stdin is then closed). A result that more messages follow
// closes stdin after steerGrace unless the CLI took another message in.
func (r *Run) endTurn() bool {
	if r.control == nil || r.control.endTurn() {
		return true
	}
	c := r.control
	n := c.takenCount()
	time.AfterFunc(steerGrace, func() {
		if c.takenCount() <= n { // nothing taken in since
			c.close()
		}
	})
	return false
}

// between folds a result line that did not end the run into what the
// run's last result reports.
type between struct {
	done    *parser.Event // the dones so far, summed
	failure *parser.Event // an error result not yet shown as a warning
}

// add notes one result line that did not end the run.
func (b *between) add(ev parser.Event) {
	if ev.Type == parser.Error {
		b.failure = &ev
		return
	}
	b.failure = nil
	if b.done == nil {
		b.done = &ev
		return
	}
	merged := sumDone(*b.done, ev)
	b.done = &merged
}

// warning returns the warning for an error result that more turns
// followed, once: the run goes on.
func (b *between) warning() (parser.Event, bool) {
	if b.failure == nil {
		return parser.Event{}, false
	}
	w := parser.Event{Type: parser.Warning, Message: b.failure.Message}
	b.failure = nil
	return w, true
}

// last returns the event that ends a run whose CLI exited after a result
// that did not end it: that result, with the dones before it summed in.
func (b *between) last() (parser.Event, bool) {
	switch {
	case b.failure != nil:
		return *b.failure, true
	case b.done != nil:
		return *b.done, true
	}
	return parser.Event{}, false
}

// final returns the run's last done with the earlier ones summed in; an
// error is returned as it is.
func (b *between) final(ev parser.Event) parser.Event {
	if ev.Type != parser.Done || b.done == nil {
		return ev
	}
	return sumDone(*b.done, ev)
}

// sumDone is the done of two turns of one run: the later session and cost
// (Claude Code's total_cost_usd counts the whole process), the durations,
// turns and tokens added up.
func sumDone(a, b parser.Event) parser.Event {
	out := b
	if a.Stats == nil || b.Stats == nil {
		if out.Stats == nil {
			out.Stats = a.Stats
		}
		return out
	}
	x, y := a.Stats, b.Stats
	st := *y
	st.DurationMS = addPtr(x.DurationMS, y.DurationMS)
	st.InputTokens = addPtr(x.InputTokens, y.InputTokens)
	st.OutputTokens = addPtr(x.OutputTokens, y.OutputTokens)
	if x.NumTurns != nil || y.NumTurns != nil {
		n := 0
		if x.NumTurns != nil {
			n += *x.NumTurns
		}
		if y.NumTurns != nil {
			n += *y.NumTurns
		}
		st.NumTurns = &n
	}
	if st.CostUSD == nil {
		st.CostUSD = x.CostUSD
	}
	out.Stats = &st
	return out
}

func addPtr(a, b *int64) *int64 {
	if a == nil && b == nil {
		return nil
	}
	var n int64
	if a != nil {
		n += *a
	}
	if b != nil {
		n += *b
	}
	return &n
}
