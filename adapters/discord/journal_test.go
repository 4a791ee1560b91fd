package discord

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/discord/discordtest"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/internal/bottest"
	"github.com/golem-chat/golem/store"
)

// restartable is a fake Discord and the files a bot restarted on it
// keeps: its store and the fake agent's log.
type restartable struct {
	fake         *discordtest.Server
	db, agentLog string
	bot          string
}

func newRestartable(t *testing.T) *restartable {
	fake := newFake(t, discordtest.Options{})
	dir := t.TempDir()
	return &restartable{fake: fake, db: filepath.Join(dir, "golem.db"), agentLog: filepath.Join(dir, "agent.log"),
		bot: fake.Options().BotUserID}
}

// start starts golem on the fake with the store, and waits until it has
// connected and registered its commands. Messages while an answer runs
// wait for their own turn (busy: queue), so that each is a run.
func (r *restartable) start(t *testing.T) *bottest.Bot {
	t.Helper()
	b := bottest.New(t, bottest.Options{DB: r.db, AgentLog: r.agentLog, Allow: []string{"discord:u1"},
		Tune: func(o *core.Options) { o.Busy = core.BusyQueue }})
	a, err := New(Options{Token: r.fake.Options().BotToken, APIURL: r.fake.URL(), Inbox: core.Inbox{Dir: t.TempDir()},
		State: b.Store, Logger: b.Log})
	if err != nil {
		t.Fatal(err)
	}
	registered := len(r.fake.Calls("PUT /applications/"))
	b.Start(a)
	if !r.fake.Wait(wait, func(v discordtest.View) bool {
		return v.Connected() && len(v.Calls("PUT /applications/")) > registered
	}) {
		t.Fatal("the adapter did not connect and register its commands")
	}
	return b
}

func (r *restartable) mention(channel, text string, atts ...discordtest.Attachment) string {
	return r.fake.Post(discordtest.UserMessage{Channel: channel, Guild: "g1", User: "u1", Content: "<@" + r.bot + "> " + text,
		Mentions: []string{r.bot}, Attachments: atts})
}

// answers is how many of the bot's replies to message id in channel say
// text.
func (r *restartable) answers(v discordtest.View, channel, id, text string) int {
	n := 0
	for _, m := range v.Messages(channel) {
		if m.ReplyTo == id && strings.Contains(m.Content, text) {
			n++
		}
	}
	return n
}

func (r *restartable) waitAnswer(t *testing.T, channel, id, text string) {
	t.Helper()
	if !r.fake.Wait(wait, func(v discordtest.View) bool { return r.answers(v, channel, id, text) > 0 }) {
		t.Fatalf("no answer to %s holding %q: %+v", id, text, r.fake.Messages(channel))
	}
}

func journaled(st core.StateStore, id string) bool {
	b, _ := st.Load(pendingKey)
	return strings.Contains(string(b), `"id":"`+id+`"`)
}

// golem stops hard (its context cancelled, the download cut short) while a
// message's attachment downloads and the next message of its channel
// waits behind it; the gateway has gone past both and never sends them
// again. The next start on the same store hands both on from the journal,
// in order, downloading the file anew, and each is answered once.
func TestE2EKillWhileAnAttachmentDownloadsLosesNothing(t *testing.T) {
	r := newRestartable(t)
	b := r.start(t)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	r.fake.Fail("GET /attachments/", 1, discordtest.Failure{Until: hold})
	withFile := r.mention("c1", "see the file", discordtest.Attachment{Name: "notes.txt", Data: []byte("the notes")})
	if !r.fake.Wait(wait, func(v discordtest.View) bool { return v.Holding() == 1 }) {
		t.Fatal("the download was not held")
	}
	behind := r.mention("c1", "and fix it")
	other := r.mention("c2", "meanwhile") // answered: the gateway has taken the two before it
	r.waitAnswer(t, "c2", other, "echo: meanwhile")
	for _, id := range []string{withFile, behind} {
		if !journaled(b.Store, id) {
			t.Fatalf("message %s taken from the gateway but not journaled", id)
		}
	}
	b.Stop()
	if runs := enginetest.ReadLog(t, r.agentLog); len(runs) != 1 {
		t.Fatalf("the agent ran %d times before the restart, want once (the other channel's)", len(runs))
	}

	b = r.start(t)
	r.waitAnswer(t, "c1", behind, "echo: and fix it")
	runs := enginetest.ReadLog(t, r.agentLog)
	if len(runs) != 3 || !strings.HasPrefix(runs[1].Prompt, "see the file") || !strings.Contains(runs[1].Prompt, "notes.txt") ||
		runs[2].Prompt != "and fix it" {
		var ps []string
		for _, inv := range runs {
			ps = append(ps, inv.Prompt)
		}
		t.Fatalf("the agent was asked %q, want the other channel's, then the file's message with its file, then \"and fix it\"", ps)
	}
	r.fake.Wait(wait, func(v discordtest.View) bool {
		if n := r.answers(v, "c1", withFile, "echo: see the file"); n != 1 {
			t.Errorf("the file's message was answered %d times, want once", n)
		}
		if n := r.answers(v, "c1", behind, "echo: and fix it"); n != 1 {
			t.Errorf("the message behind it was answered %d times, want once", n)
		}
		if n := len(v.Calls("GET /attachments/")); n != 1 {
			t.Errorf("the attachment was downloaded %d times, want once (after the restart)", n)
		}
		return true
	})
	b.Stop()
	if j := storedJournal(t, r.db); j != nil {
		t.Errorf("the journal still holds %s", j)
	}
}

// storedJournal is the journal in the store file db of a bot stopped.
func storedJournal(t *testing.T, db string) []byte {
	t.Helper()
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.Load(pendingKey)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// golem stops hard while a message's attachment downloads and a slash
// command of its channel waits behind it, deferred ("thinking…"), and
// starts again a minute later, when Discord takes no first response for
// the interaction any more. The next start hands both on from the
// journal, in order. While the interaction's token works, the answer fills
// the response the last run deferred; once Discord refuses the token (past
// its 15 minutes), or when the last run's deferral never landed, the
// answer is a bot message in the channel instead. Either way it is
// answered once.
func TestE2EKillWhileASlashCommandWaitsBehindADownload(t *testing.T) {
	for _, tc := range []struct {
		name       string
		away       time.Duration // how long golem was away
		undeferred bool          // Discord failed the deferral before the restart
		inChannel  bool          // the answer is a channel message
	}{
		{"token alive", time.Minute, false, false},
		{"token expired", 16 * time.Minute, false, true},
		{"never deferred", time.Minute, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRestartable(t)
			b := r.start(t)
			hold := make(chan struct{})
			t.Cleanup(func() { close(hold) })
			r.fake.Fail("GET /attachments/", 1, discordtest.Failure{Until: hold})
			if tc.undeferred {
				r.fake.Fail("POST /interactions/", 1000, discordtest.Failure{Status: http.StatusServiceUnavailable})
			}
			withFile := r.mention("c1", "see the file", discordtest.Attachment{Name: "notes.txt", Data: []byte("the notes")})
			if !r.fake.Wait(wait, func(v discordtest.View) bool { return v.Holding() == 1 }) {
				t.Fatal("the download was not held")
			}
			cmd := r.fake.Command(discordtest.Slash{Channel: "c1", Guild: "g1", User: "u1", Name: "ask",
				Options: []discordtest.Option{{Name: "prompt", Value: "and fix it"}}})
			if !r.fake.Wait(wait, func(v discordtest.View) bool {
				in, _ := v.Interaction(cmd)
				return in.Callback == 5 || tc.undeferred && len(v.Calls("POST /interactions/")) > 0
			}) {
				t.Fatal("the slash command waiting behind the download was not deferred")
			}
			if !journaled(b.Store, cmd) {
				t.Fatalf("slash command %s waiting behind a download was not journaled", cmd)
			}
			b.Stop()
			if runs := enginetest.ReadLog(t, r.agentLog); len(runs) != 0 {
				t.Fatalf("the agent ran %d times before the restart, want none", len(runs))
			}
			r.fake.Age(tc.away)

			b = r.start(t)
			in, _ := r.fake.Interaction(cmd)
			answered := func(v discordtest.View) (byToken, inChannel int) {
				for _, m := range v.Messages("c1") {
					switch {
					case !strings.Contains(m.Content, "echo: and fix it"):
					case m.Interaction == cmd && (m.ID == in.Original || in.Original == ""):
						byToken++
					case m.Interaction == "":
						inChannel++
					}
				}
				return byToken, inChannel
			}
			if !r.fake.Wait(wait, func(v discordtest.View) bool { tok, ch := answered(v); return tok+ch > 0 }) {
				t.Fatalf("the slash command was not answered after the restart: %+v", r.fake.Messages("c1"))
			}
			r.waitAnswer(t, "c1", withFile, "echo: see the file")
			runs := enginetest.ReadLog(t, r.agentLog)
			if len(runs) != 2 || !strings.HasPrefix(runs[0].Prompt, "see the file") || runs[1].Prompt != "and fix it" {
				var ps []string
				for _, inv := range runs {
					ps = append(ps, inv.Prompt)
				}
				t.Fatalf("the agent was asked %q, want the file's message, then the slash command", ps)
			}
			b.Stop()
			var tok, ch int
			r.fake.Wait(wait, func(v discordtest.View) bool { tok, ch = answered(v); return true })
			if want := map[bool][2]int{false: {1, 0}, true: {0, 1}}[tc.inChannel]; [2]int{tok, ch} != want {
				t.Errorf("answered %d times through the interaction and %d in the channel, want %v", tok, ch, want)
			}
			if j := storedJournal(t, r.db); j != nil {
				t.Errorf("the journal still holds %s", j)
			}
		})
	}
}
