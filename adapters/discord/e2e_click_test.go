package discord

import (
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/discord/discordtest"
)

// TestLateClickShowsItsOutcomeInTheChannel: two clicks on one question, a
// stranger's and then the asker's, while Discord holds every answer to an
// interaction. The asker's click waits behind the stranger's, and its
// 2.5 s run from its own arrival, not from its turn: by then Discord
// takes no answer for it (the clicker sees "This interaction failed"), so
// the question is settled by an edit, with its outcome and no buttons,
// within Discord's 3 s of the click give or take the edit; the stranger's
// refusal, which can no longer be private, is a reply to the question
// that names them without pinging.
func TestLateClickShowsItsOutcomeInTheChannel(t *testing.T) {
	w := newWorld(t, discordtest.Options{}, Options{})
	w.ask("u1", "c1", "!ask Bash {\"command\":\"true\"}\nran it")
	var q discordtest.Message
	if !w.fake.Wait(wait, func(v discordtest.View) bool {
		for _, m := range v.All() {
			if strings.Contains(m.Components, "golem:allow:") {
				q = m
				return true
			}
		}
		return false
	}) {
		t.Fatal("no question with buttons")
	}
	i := strings.Index(q.Components, "golem:allow:")
	allow := q.Components[i : i+len("golem:allow:")+8]
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	w.fake.Fail("POST /interactions/", 2, discordtest.Failure{Until: hold})
	click := func(user string) string {
		return w.fake.Click(discordtest.Click{Guild: "g1", Channel: q.ChannelID, Message: q.ID, User: user, CustomID: allow})
	}
	click("u9")
	if !w.fake.Wait(wait, func(v discordtest.View) bool { return v.Holding() == 1 }) {
		t.Fatal("the stranger's answer was not held")
	}
	asker := click("u1")
	clicked, _ := w.fake.Interaction(asker)

	var settled discordtest.Message
	if !w.fake.Wait(wait, func(v discordtest.View) bool {
		settled, _ = v.Message(q.ID)
		return strings.Contains(settled.Content, "allowed by") && !strings.Contains(settled.Components, "golem:")
	}) {
		t.Fatalf("the question was not settled to its outcome without buttons: %+v", settled)
	}
	if in, _ := w.fake.Interaction(asker); in.Callback != 0 {
		t.Fatalf("the asker's click was answered (type %d) though Discord held it", in.Callback)
	}
	var at time.Time
	for _, c := range w.fake.Calls("PATCH /channels/" + q.ChannelID + "/messages/" + q.ID) {
		if c.Status < 300 {
			at = c.At
			break
		}
	}
	if at.IsZero() {
		t.Fatal("the question was settled by no edit")
	}
	// deferTimeout and then one edit; a fresh 2.5 s after the stranger's
	// answer was given up would make it 5 s.
	if took := at.Sub(clicked.Created); took > deferTimeout+time.Second {
		t.Errorf("the asker saw the outcome %v after the click, want about %v (Discord's window is 3 s)", took, deferTimeout)
	}

	if !w.fake.Wait(wait, func(v discordtest.View) bool {
		for _, m := range v.Messages(q.ChannelID) {
			if m.ReplyTo == q.ID && m.Content == "<@u9> Only the asker or an approver can answer this." {
				return true
			}
		}
		return false
	}) {
		t.Error("the stranger's refusal was not shown as a reply to the question")
	}
	if !w.fake.Wait(wait, func(v discordtest.View) bool {
		for _, m := range v.All() {
			if strings.Contains(m.Content, "echo: ran it") {
				return true
			}
		}
		return false
	}) {
		t.Error("the agent did not carry on after the allow")
	}
	checkNoPings(t, w.fake)
}
