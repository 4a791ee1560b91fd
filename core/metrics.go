package core

import (
	"errors"
	"time"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/parser"
)

// Meter is told what the dispatcher does, for metrics (package metrics
// implements it with Prometheus; core stays free of that dependency and a
// test can hand in a fake). Its methods are called on the turns'
// goroutines and must be quick and never block. Labels are fixed names:
// an engine's config name, a platform's, an outcome; never a message's
// text, a user or a token.
type Meter interface {
	// TurnEnded is told of every turn that ran or was meant to: how it
	// ended and how long it took.
	TurnEnded(TurnStats)
	// EngineFailed is told of a failure of the engine's CLI, by kind (see
	// the Failure constants).
	EngineFailed(engine, kind string)
	// Approval is told of every permission request decided: its decision
	// ("allow", "allow_session", "deny") and why it ended (a
	// store.ApprovalEnd: "answered", "timed_out", "stopped", ...).
	Approval(decision, reason string)
	// BusyMessage is told of a message that came while its conversation's
	// answer ran, by what was done with it (see Busy): "steered" into the
	// running turn, "interrupted" it, or "queued" because the engine
	// cannot steer (told once per conversation). engine may be "" when
	// the running turn's engine was not known yet.
	BusyMessage(platform, engine, handling string)
}

// TurnStats describe one finished turn.
type TurnStats struct {
	Engine, Platform string
	// Outcome is done, error, stopped, timed_out or interrupted (Outcome);
	// a crash counts as error.
	Outcome string
	// Duration runs from the message's arrival to the turn's end; FirstText
	// to the first visible text of the answer, zero when there was none.
	Duration, FirstText time.Duration
}

// The kinds of Meter.EngineFailed.
const (
	FailureNotInstalled = "not_installed" // the CLI was not found
	FailureStart        = "start"         // it could not be started
	FailureCrashed      = "crashed"       // its output ended without a result
	FailureCLIError     = "cli_error"     // it reported an error itself
)

// Outcome is the metrics' name of how a run ended: "done", or the
// terminal error's reason, a crash counting as "error".
func Outcome(ev parser.Event) string {
	switch {
	case ev.Type == parser.Done:
		return "done"
	case ev.Reason == parser.Crashed:
		return parser.Failed.String()
	}
	return ev.Reason.String()
}

// noMeter counts nothing; it stands in for a nil Options.Meter.
type noMeter struct{}

func (noMeter) TurnEnded(TurnStats)                {}
func (noMeter) EngineFailed(string, string)        {}
func (noMeter) Approval(string, string)            {}
func (noMeter) BusyMessage(string, string, string) {}

// measure tells the Meter how a turn of m on eng ended: terminal is its
// terminal event, startErr the error of a run that could not start,
// firstText when its first text came (zero: none).
func (d *Dispatcher) measure(m Message, eng string, terminal parser.Event, startErr error, firstText time.Time) {
	now := time.Now()
	arrived := m.arrived
	if arrived.IsZero() {
		arrived = now
	}
	st := TurnStats{Engine: eng, Platform: m.Platform, Outcome: Outcome(terminal), Duration: now.Sub(arrived)}
	if !firstText.IsZero() {
		st.FirstText = firstText.Sub(arrived)
	}
	d.meter.TurnEnded(st)
	m.promptEnded(st.Outcome)
	switch {
	case startErr != nil && errors.Is(startErr, engine.ErrNotInstalled):
		d.meter.EngineFailed(eng, FailureNotInstalled)
	case startErr != nil:
		d.meter.EngineFailed(eng, FailureStart)
	case terminal.Type == parser.Error && terminal.Reason == parser.Crashed:
		d.meter.EngineFailed(eng, FailureCrashed)
	case terminal.Type == parser.Error && terminal.Reason == parser.Failed:
		d.meter.EngineFailed(eng, FailureCLIError)
	}
}

// Load reports how many turns run now (holding one of MaxConcurrent's
// slots) and how many messages wait: behind their conversation's turn, or
// for a slot. A turn whose agent has exited and that is still finishing
// (its slot given back) is neither.
func (d *Dispatcher) Load() (running, waiting int) {
	for _, c := range d.conversations() {
		c.mu.Lock()
		waiting += c.waiting()
		c.mu.Unlock()
	}
	return len(d.slots), waiting
}

// engineFor is the engine a turn of m would run on, for a turn that never
// started.
func (d *Dispatcher) engineFor(m Message) string {
	conv, err := d.opts.Store.Conversation(KeyFor(m, d.opts.Scope))
	if err != nil {
		return d.opts.DefaultEngine
	}
	return d.settings(m, conv).engine
}
