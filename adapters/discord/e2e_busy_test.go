package discord

import (
	"slices"
	"strings"
	"testing"

	"github.com/golem-chat/golem/adapters/discord/discordtest"
)

// A mention while the answer runs goes into it (busy: steer, the default
// with Claude Code): the bot reacts 👀 to it, the one answer carries what
// the agent made of it, and no note is posted.
func TestMentionWhileAnsweringSteers(t *testing.T) {
	w := newWorld(t, discordtest.Options{}, Options{})
	mention := "<@" + w.bot + "> "
	w.fake.Post(discordtest.UserMessage{Channel: "c2", Guild: "g1", User: "u1",
		Content: mention + "!text 20\n!await\nfinal", Mentions: []string{w.bot}})
	if !w.fake.Wait(wait, func(v discordtest.View) bool {
		got := v.Messages("c2")
		return len(got) == 1 && strings.HasPrefix(got[0].Content, "the quick")
	}) {
		t.Fatalf("the answer did not start: %+v", w.fake.Messages("c2"))
	}
	second := w.fake.Post(discordtest.UserMessage{Channel: "c2", Guild: "g1", User: "u1",
		Content: mention + "also this", Mentions: []string{w.bot}})
	want := "the quick brown fox heard: also thisecho: final"
	if !w.fake.Wait(wait, func(v discordtest.View) bool {
		got := v.Messages("c2")
		m, _ := v.Message(second)
		return len(got) == 1 && got[0].Content == want && slices.Equal(m.Reactions, []string{"👀"})
	}) {
		m, _ := w.fake.Message(second)
		t.Fatalf("channel holds %+v, the steered message's reactions %v; want one answer %q and 👀", w.fake.Messages("c2"), m.Reactions, want)
	}
	for _, m := range w.fake.Messages("c2") {
		if strings.Contains(m.Content, "noted") {
			t.Errorf("a note was posted although the message has its reaction: %q", m.Content)
		}
	}
	checkNoPings(t, w.fake)
}

// A slash command has no message to react to: /ask while an answer runs
// is steered into it and answered with the short note, privately.
func TestAskWhileAnsweringGetsANote(t *testing.T) {
	w := newWorld(t, discordtest.Options{}, Options{})
	first := w.ask("u1", "c1", "!text 20\n!await\nfinal")
	w.original(t, first, "the quick brown fox ")
	second := w.ask("u1", "c1", "also this")
	w.original(t, first, "the quick brown fox heard: also thisecho: final")
	// Its public "thinking…" gives way to an ephemeral follow-up.
	if !w.fake.Wait(wait, func(v discordtest.View) bool {
		for _, m := range v.All() {
			if m.Interaction == second && m.Flags&64 != 0 && strings.Contains(m.Content, "noted: added to the answer in progress") {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no ephemeral note for the steered /ask; the bot's messages: %+v", w.fake.Messages("c1"))
	}
}
