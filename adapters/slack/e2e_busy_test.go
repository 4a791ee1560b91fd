package slack

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/slack/slacktest"
)

// A mention while the answer runs goes into it (busy: steer, the default
// with Claude Code): the message gets the 👀 reaction, which stays, the
// one answer carries what the agent made of it, and no note is posted.
func TestE2EMentionWhileAnsweringSteers(t *testing.T) {
	b := newE2E(t, botConfig{})
	first := b.say(slacktest.Event{Channel: "C1", Text: mention + " !text 20\n!await\nfinal"})
	if !b.fake.Wait(30*time.Second, func() bool {
		ms := b.fake.BotMessages("C1")
		return len(ms) == 1 && strings.HasPrefix(ms[0].Text, "the quick")
	}) {
		t.Fatalf("the answer did not start: %+v", b.fake.BotMessages("C1"))
	}
	second := b.say(slacktest.Event{Channel: "C1", Text: mention + " also this"})
	b.answer("C1", first.TS, "the quick brown fox heard: also thisecho: final")
	if m, _ := b.fake.Message("C1", second.TS); !slices.Equal(m.Reactions, []string{ackReaction}) {
		t.Errorf("the steered message has reactions %v, want %q", m.Reactions, ackReaction)
	}
	for _, m := range b.fake.BotMessages("C1") {
		if strings.Contains(m.Text, "noted") {
			t.Errorf("a note was posted although the message has its reaction: %q", m.Text)
		}
	}
	if runs := b.runs(); len(runs) != 1 {
		t.Errorf("the agent ran %d times, want once", len(runs))
	}
}

// An acknowledgement that Slack refuses falls back to the short note.
func TestE2ESteerAckRefusedGetsANote(t *testing.T) {
	b := newE2E(t, botConfig{})
	first := b.say(slacktest.Event{Channel: "C1", Text: mention + " !text 20\n!await\nfinal"})
	// The answer has started and its working reaction is on.
	if !b.fake.Wait(30*time.Second, func() bool {
		return len(b.fake.BotMessages("C1")) == 1 && b.fake.Count("reactions.add", 200) == 1
	}) {
		t.Fatal("the answer did not start")
	}
	b.fake.Fail("reactions.add", 1, slacktest.Failure{Error: "message_not_found"})
	b.say(slacktest.Event{Channel: "C1", Text: mention + " also this"})
	b.answer("C1", first.TS, "the quick brown fox heard: also thisecho: final")
	if !b.fake.Wait(30*time.Second, func() bool {
		for _, m := range b.fake.BotMessages("C1") {
			if strings.Contains(m.Text, "noted: added to the answer in progress") {
				return true
			}
		}
		return false
	}) {
		t.Errorf("no note after the refused reaction; reactions.add calls: %+v", b.fake.Calls("reactions.add"))
	}
}
