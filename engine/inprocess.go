package engine

import "github.com/golem-chat/golem/parser"

// NewRun returns a Run that delivers the events sent on events, for engines
// that run in-process rather than as a CLI (scripted engines in tests and
// benchmarks). The producer sends exactly one terminal event and then
// closes events.
func NewRun(events chan parser.Event) *Run {
	return &Run{events: events, answers: make(chan PermissionAnswer)}
}
