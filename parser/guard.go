package parser

// Guard enforces, for one run, the rule that a run's events end with exactly
// one terminal event (Done or Error). It wraps the run's Parser: Parse
// forwards events up to and including the first terminal event and drops
// everything after it; when the output ends, Finish supplies the terminal
// error if none was seen. The engine and `bot events` both read a CLI's
// output through a Guard. Not safe for concurrent use.
type Guard struct {
	p     Parser
	ended bool
}

// NewGuard returns a Guard over p, which must be fresh for the run.
func NewGuard(p Parser) *Guard { return &Guard{p: p} }

// Parse parses one line with the wrapped parser and returns its events,
// cut after the run's first terminal event. After that it returns nil. As
// with any Parser, the slice is valid until the next Parse.
func (g *Guard) Parse(line []byte) []Event {
	if g.ended {
		return nil
	}
	events := g.p.Parse(line)
	for i, e := range events {
		if e.Terminal() {
			g.ended = true
			return events[:i+1]
		}
	}
	return events
}

// Continue lets events through again after a terminal event that the
// caller did not take as the run's end: Claude Code answers a user message
// steered into the run too late for the turn under way in a turn of its
// own, with a result line of its own (see engine.Run.Steer).
func (g *Guard) Continue() { g.ended = false }

// Ended reports whether the run's terminal event has been delivered (by
// Parse, Finish or Abort).
func (g *Guard) Ended() bool { return g.ended }

// Finish is called when the output has ended. If no terminal event was
// delivered, it returns the error event that ends the run, with the reason
// Crashed and the message "the agent ended without a result", followed by
// ": " and detail when detail is not empty (e.g. "exit status 1; stderr:
// ..."), and true. Otherwise it returns false.
func (g *Guard) Finish(detail string) (Event, bool) {
	msg := "the agent ended without a result"
	if detail != "" {
		msg += ": " + detail
	}
	return g.Abort(Crashed, msg)
}

// Ender is implemented by the parser of a CLI that prints no result line
// (OpenCode): once the output has ended, End returns the run's terminal
// event from what its lines said, given whether the process exited with
// status 0; ok false leaves the ending to Finish.
type Ender interface {
	End(exitedOK bool) (e Event, ok bool)
}

// End is Finish for a run whose exit is known: when the wrapped parser is
// an Ender and no terminal event was delivered yet, it decides the
// terminal event first; otherwise (or when it declines) End is Finish.
func (g *Guard) End(exitedOK bool, detail string) (Event, bool) {
	if g.ended {
		return Event{}, false
	}
	if en, ok := g.p.(Ender); ok {
		if e, ok := en.End(exitedOK); ok && e.Terminal() {
			g.ended = true
			return e, true
		}
	}
	return g.Finish(detail)
}

// Abort ends the run with an error event of reason and message (e.g.
// Stopped, "stopped") and returns it with true, unless a terminal event was
// already delivered, in which case it returns false.
func (g *Guard) Abort(reason Reason, message string) (Event, bool) {
	if g.ended {
		return Event{}, false
	}
	g.ended = true
	return Event{Type: Error, Message: message, Reason: reason}, true
}

// Guard is itself a Parser, so it can stand wherever one is expected.
var _ Parser = (*Guard)(nil)
