package engine

import (
	"context"

	"github.com/golem-chat/golem/parser"
)

// NewRun returns a Run that delivers the events sent on events, for engines
// that run in-process rather than as a CLI (scripted engines in tests and
// benchmarks). The producer sends exactly one terminal event and then
// closes events; the Run has exited then. Each event is handed over as it
// comes, none is held.
func NewRun(events chan parser.Event) *Run {
	r := newRun(context.Background(), 0)
	go func() {
		for ev := range events {
			r.push(ev)
			r.flush()
		}
		close(r.exited)
	}()
	return r
}
