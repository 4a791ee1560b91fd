package core_test

import (
	"regexp"
	"testing"
	"unicode/utf8"

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

// TestCommandsFitEveryMenu: each command and argument is named and
// described as Telegram's setMyCommands and Discord's application commands
// accept (lowercase names of at most 32 characters, descriptions of 1 to
// 100), required arguments come before optional ones (Discord's rule), and
// /help lists every one.
func TestCommandsFitEveryMenu(t *testing.T) {
	name := regexp.MustCompile(`^[a-z0-9_]{1,32}$`)
	fits := func(s string) bool { n := utf8.RuneCountInString(s); return n >= 1 && n <= 100 }
	limits := chatLimits
	limits.MaxLen = 4000 // /help is one message
	h := newHarness(t, limits, nil)
	h.say("alice", "/help")
	for _, c := range core.Commands() {
		if !name.MatchString(c.Name) || !fits(c.Summary) || c.Help == "" {
			t.Errorf("/%s: name or summary %q does not fit a menu, or no help", c.Name, c.Summary)
		}
		optional := false
		for _, a := range c.Args {
			if !name.MatchString(a.Name) || !fits(a.Summary) {
				t.Errorf("/%s %s: name or summary %q does not fit Discord's options", c.Name, a.Name, a.Summary)
			}
			if a.Required && optional {
				t.Errorf("/%s %s: a required argument after an optional one", c.Name, a.Name)
			}
			optional = optional || !a.Required
		}
		h.rec.waitText("• `/" + c.Name + "` — " + c.Help)
	}
}
