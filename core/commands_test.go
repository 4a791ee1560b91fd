package core_test

import (
	"testing"

	"github.com/golem-chat/golem/core"
)

// TestHelpAndEngineListTheConfiguredEngines checks that /help and /engine
// offer the engines of Options.Engines, whatever their names.
func TestHelpAndEngineListTheConfiguredEngines(t *testing.T) {
	limits := chatLimits
	limits.MaxLen = 4000 // /help is one message
	h := newHarness(t, limits, func(o *core.Options) {
		o.Engines["zz-other"] = o.Engines["claude-code"]
	})
	h.say("alice", "/help")
	h.rec.waitText("• `/engine` — ")
	h.rec.waitText("Engines: claude-code, zz-other.")
	h.say("alice", "/engine")
	h.rec.waitText("Available: claude-code, zz-other.")
	h.say("alice", "/engine nope")
	h.rec.waitText(`Unknown engine "nope". Available: claude-code, zz-other.`)
}
