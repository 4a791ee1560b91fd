package discord

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/discord/discordtest"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/internal/bottest"
)

// world is the adapter wired to core and the fake agent CLI, against the
// fake Discord.
type world struct {
	fake     *discordtest.Server
	a        *Adapter
	agentLog string
	bot      string
	golem    *bottest.Bot
}

func newWorld(t testing.TB, fopts discordtest.Options, aopts Options, allow ...string) *world {
	return newWorldWith(t, fopts, aopts, func(*core.Options) {}, allow...)
}

// newWorldWith is newWorld with a last say on the dispatcher's options.
func newWorldWith(t testing.TB, fopts discordtest.Options, aopts Options, tune func(*core.Options), allow ...string) *world {
	t.Helper()
	return newWorldBot(t, fopts, aopts, bottest.Options{Allow: allow, Tune: tune})
}

// newWorldBot is newWorld with golem's options (Allow: discord:u1 when
// empty).
func newWorldBot(t testing.TB, fopts discordtest.Options, aopts Options, bopts bottest.Options) *world {
	t.Helper()
	if len(bopts.Allow) == 0 {
		bopts.Allow = []string{"discord:u1"}
	}
	fake := newFake(t, fopts)
	b := bottest.New(t, bopts)
	aopts.Token, aopts.APIURL = fake.Options().BotToken, fake.URL()
	aopts.Logger = b.Log
	a, err := New(aopts)
	if err != nil {
		t.Fatal(err)
	}
	b.Start(a)
	if !fake.Wait(wait, func(v discordtest.View) bool { return v.Connected() && len(v.Calls("PUT /applications/")) > 0 }) {
		t.Fatal("the adapter did not connect and register its commands")
	}
	return &world{fake: fake, a: a, agentLog: b.AgentLog, bot: fake.Options().BotUserID, golem: b}
}

// ask runs /ask in guild channel c1 as user and returns the interaction id.
func (w *world) ask(user, channel, prompt string) string {
	return w.fake.Command(discordtest.Slash{Channel: channel, Guild: "g1", User: user, Name: "ask", Options: []discordtest.Option{{Name: "prompt", Value: prompt}}})
}

// original waits until interaction id's response holds want and returns it.
func (w *world) original(t *testing.T, id, want string) discordtest.Message {
	t.Helper()
	var m discordtest.Message
	ok := w.fake.Wait(wait, func(v discordtest.View) bool {
		in, _ := v.Interaction(id)
		m, _ = v.Message(in.Original)
		return in.Original != "" && m.Content == want
	})
	if !ok {
		t.Fatalf("the response to %s never read %q; last %q", id, want, m.Content)
	}
	return m
}

// checkNoPings asserts every message-carrying request parsed no mentions.
func checkNoPings(t *testing.T, fake *discordtest.Server) {
	t.Helper()
	for _, c := range fake.Calls("") {
		if _, has := c.Body["content"]; !has {
			continue
		}
		parse, ok := c.AllowedMentions["parse"].([]any)
		if !ok || len(parse) != 0 {
			t.Errorf("%s %s: allowed_mentions = %v, want {parse: []}", c.Method, c.Path, c.AllowedMentions)
		}
	}
}

func TestAskStreamsEditsThreadsToolsAndResumes(t *testing.T) {
	w := newWorld(t, discordtest.Options{}, Options{})
	id := w.ask("u1", "c1", "!delta-rate 40ms 50\n!tool Bash {\"command\":\"go test ./...\"}\n!tool Read {\"file_path\":\"main.go\"}\nmore")
	orig := w.original(t, id, strings.Repeat("x", 50)+"\n\necho: more")

	in, _ := w.fake.Interaction(id)
	if in.Callback != 5 || in.CallbackFlags != 0 {
		t.Errorf("callback %d flags %d, want a public deferral (5)", in.Callback, in.CallbackFlags)
	}
	if len(orig.History) < 3 {
		t.Errorf("the answer grew in %d steps %q; want it to grow by edits", len(orig.History), orig.History)
	}
	if orig.Thread == "" {
		t.Fatal("no thread was started on the answer")
	}
	var activity []string
	w.fake.Wait(wait, func(v discordtest.View) bool {
		activity = nil
		for _, m := range v.Messages(orig.Thread) {
			activity = append(activity, m.Content)
		}
		return strings.Contains(strings.Join(activity, "\n"), "📖 **Read** — `main.go`")
	})
	all := strings.Join(activity, "\n")
	if !strings.Contains(all, "🔧 **Bash** — `go test ./...`") || !strings.Contains(all, "📖 **Read** — `main.go`") {
		t.Errorf("thread holds %q, want both tools", activity)
	}
	if n := len(w.fake.Messages("c1")); n != 1 {
		t.Errorf("channel c1 has %d messages, want only the answer (activity goes to the thread)", n)
	}
	if n := len(w.fake.Calls("POST /channels/c1/typing")); n != 0 {
		t.Errorf("%d typing calls; a deferred interaction already shows 'thinking…'", n)
	}

	id2 := w.ask("u1", "c1", "second")
	w.original(t, id2, "echo: second")
	runs := enginetest.ReadLog(t, w.agentLog)
	if len(runs) != 2 {
		t.Fatalf("%d agent runs, want 2", len(runs))
	}
	if got, ok := runs[1].Flag("--resume"); !ok || got != runs[0].SessionID {
		t.Errorf("second run --resume %q (%v), want the first session %q", got, ok, runs[0].SessionID)
	}
	checkNoPings(t, w.fake)
}

func TestMentionInChannelAndSanitizing(t *testing.T) {
	w := newWorld(t, discordtest.Options{}, Options{})
	mid := w.fake.Post(discordtest.UserMessage{Channel: "c2", Guild: "g1", User: "u1",
		Content: "<@" + w.bot + "> ping @everyone and @here, <@&77> <@5>", Mentions: []string{w.bot}})
	want := "echo: ping @\u200beveryone and @\u200bhere, <@&77> <@5>"
	var got []discordtest.Message
	if !w.fake.Wait(wait, func(v discordtest.View) bool {
		got = v.Messages("c2")
		return len(got) == 1 && got[0].Content == want
	}) {
		t.Fatalf("channel holds %+v, want one reply %q", got, want)
	}
	if got[0].ReplyTo != mid {
		t.Errorf("reply references %q, want the mention %q", got[0].ReplyTo, mid)
	}
	if n := len(w.fake.Calls("POST /channels/c2/typing")); n == 0 {
		t.Error("no typing indicator while the mention was answered")
	}
	checkNoPings(t, w.fake)
}

func TestDirectMessage(t *testing.T) {
	w := newWorld(t, discordtest.Options{}, Options{})
	w.fake.DM("dm1")
	mid := w.fake.Post(discordtest.UserMessage{Channel: "dm1", User: "u1", Content: "!tool Bash {\"command\":\"ls\"}\nhello"})
	var msgs []discordtest.Message
	if !w.fake.Wait(wait, func(v discordtest.View) bool {
		msgs = v.Messages("dm1")
		return len(msgs) == 2 && msgs[0].Content == "echo: hello"
	}) {
		t.Fatalf("DM holds %+v, want the answer and one activity reply", msgs)
	}
	answer, activity := msgs[0], msgs[1]
	if answer.ReplyTo != mid || activity.ReplyTo != answer.ID || activity.Content != "🔧 **Bash** — `ls`" {
		t.Errorf("answer %+v, activity %+v", answer, activity)
	}
	if n := len(w.fake.Calls("POST /channels/dm1/messages/" + answer.ID + "/threads")); n != 0 {
		t.Errorf("%d thread starts in a DM", n)
	}
}

func TestStopIsEphemeralAndStopsTheAnswer(t *testing.T) {
	w := newWorld(t, discordtest.Options{}, Options{})
	id := w.ask("u1", "c1", "!text 30\n!hang")
	if !w.fake.Wait(wait, func(v discordtest.View) bool {
		in, _ := v.Interaction(id)
		m, _ := v.Message(in.Original)
		return strings.HasPrefix(m.Content, "the quick")
	}) {
		t.Fatal("the answer never started")
	}
	sid := w.fake.Command(discordtest.Slash{Channel: "c1", Guild: "g1", User: "u1", Name: "stop"})
	w.original(t, id, "the quick brown fox jumps over\n\n⏹️ _Stopped._")
	in, _ := w.fake.Interaction(sid)
	stop, _ := w.fake.Message(in.Original)
	if in.CallbackFlags&64 == 0 || stop.Flags&64 == 0 || stop.Content == "" {
		t.Errorf("/stop answered %+v (callback flags %d), want an ephemeral text", stop, in.CallbackFlags)
	}
}

func TestUnauthorizedUserGetsEphemeralRefusal(t *testing.T) {
	w := newWorld(t, discordtest.Options{}, Options{})
	id := w.ask("u9", "c1", "rm -rf /")
	var refusal discordtest.Message
	if !w.fake.Wait(wait, func(v discordtest.View) bool {
		for _, m := range v.Messages("c1") {
			if m.Interaction == id && !m.Original {
				refusal = m
				return true
			}
		}
		return false
	}) {
		t.Fatal("no refusal")
	}
	if refusal.Flags&64 == 0 || !strings.Contains(refusal.Content, "not allowed") || !strings.Contains(refusal.Content, "discord:u9") {
		t.Errorf("refusal = %+v, want an ephemeral 'not allowed' naming discord:u9", refusal)
	}
	in, _ := w.fake.Interaction(id)
	if orig, _ := w.fake.Message(in.Original); !orig.Deleted {
		t.Errorf("the public 'thinking…' response was left: %+v", orig)
	}
	if runs := enginetest.ReadLog(t, w.agentLog); len(runs) != 0 {
		t.Errorf("the agent ran %d times for an unauthorized user", len(runs))
	}
}

// TestAnswerOutlivesToken: an answer still growing when the interaction
// token expires goes on through the bot token with its full text.
func TestAnswerOutlivesToken(t *testing.T) {
	life := 1500 * time.Millisecond
	for _, tt := range []struct {
		name      string
		editable  bool          // the fake lets the bot token edit interaction messages
		adapterTL time.Duration // the adapter's idea of the token's life
	}{
		{"new bot message", false, life},
		{"bot edits the response", true, life},
		{"expiry learnt from 401 50027", false, 0}, // the adapter assumes 15 minutes
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, discordtest.Options{TokenLife: life, InteractionMessagesBotEditable: tt.editable}, Options{TokenLife: tt.adapterTL})
			id := w.ask("u1", "c1", "!delta-rate 20ms 150")
			full := strings.Repeat("x", 150)
			var where discordtest.Message
			if !w.fake.Wait(wait, func(v discordtest.View) bool {
				for _, m := range v.Messages("c1") {
					if m.Content == full {
						where = m
						return true
					}
				}
				return false
			}) {
				t.Fatalf("the full text never appeared; channel: %+v", w.fake.Messages("c1"))
			}
			in, _ := w.fake.Interaction(id)
			if tt.editable && where.ID != in.Original {
				t.Errorf("full text in %+v, want the response itself edited by the bot", where)
			}
			if !tt.editable && (where.Interaction != "" || where.ReplyTo != in.Original) {
				t.Errorf("full text in %+v, want a bot message replying to the response %s", where, in.Original)
			}
			if n := len(w.fake.Calls("PATCH /webhooks/")); n == 0 {
				t.Error("the token was never used while it lived")
			}
			if tt.adapterTL == 0 {
				rejected := 0
				for _, c := range w.fake.Calls("") {
					if strings.HasPrefix(c.Path, "/webhooks/") && c.Status == 401 {
						rejected++
					}
				}
				if rejected != 1 {
					t.Errorf("%d webhook calls rejected with 401, want exactly 1 (then the adapter stops using the token)", rejected)
				}
			}
		})
	}
}

// TestReconnectMidAnswer: op 7 and a dropped socket while an answer
// streams lose neither the answer nor the events sent meanwhile.
func TestReconnectMidAnswer(t *testing.T) {
	w := newWorld(t, discordtest.Options{}, Options{})
	id := w.ask("u1", "c1", "!delta-rate 20ms 150")
	w.fake.Wait(wait, func(v discordtest.View) bool { in, _ := v.Interaction(id); return in.Original != "" })
	w.fake.Reconnect()
	mid := w.fake.Post(discordtest.UserMessage{Channel: "c3", Guild: "g1", User: "u1", Content: "<@" + w.bot + "> during op 7", Mentions: []string{w.bot}})
	w.fake.Wait(wait, func(v discordtest.View) bool { return v.Connected() })
	w.fake.Drop()
	id2 := w.ask("u1", "c4", "during drop")
	w.original(t, id, strings.Repeat("x", 150))
	w.original(t, id2, "echo: during drop")
	if !w.fake.Wait(wait, func(v discordtest.View) bool {
		msgs := v.Messages("c3")
		return len(msgs) == 1 && msgs[0].ReplyTo == mid && msgs[0].Content == "echo: during op 7"
	}) {
		t.Errorf("the mention sent during op 7 was not answered: %+v", w.fake.Messages("c3"))
	}
}

// TestLongAnswerContinues: past 2,000 characters the answer goes on in
// follow-ups, each within the limit and with its code fences balanced,
// and together they hold the whole text.
func TestLongAnswerContinues(t *testing.T) {
	w := newWorld(t, discordtest.Options{}, Options{})
	var code strings.Builder
	for i := range 200 {
		fmt.Fprintf(&code, "fmt.Println(%d) // a line of code\n", i)
	}
	body := "intro\n```go\n" + code.String() + "```\nafter"
	id := w.ask("u1", "c1", body)
	want := withoutFences("echo: " + body)
	var msgs []discordtest.Message
	if !w.fake.Wait(wait, func(v discordtest.View) bool {
		msgs = v.Messages("c1")
		var all strings.Builder
		for _, m := range msgs {
			all.WriteString(m.Content)
		}
		return withoutFences(all.String()) == want
	}) {
		t.Fatalf("the answer never held the whole text; %d messages", len(msgs))
	}
	if len(msgs) < 3 {
		t.Errorf("answer in %d messages, want it continued past 2,000 characters", len(msgs))
	}
	for i, m := range msgs {
		if n := len([]rune(m.Content)); n > MaxLen {
			t.Errorf("message %d has %d characters", i, n)
		}
		fences := 0
		for _, line := range strings.Split(m.Content, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fences++
			}
		}
		if fences%2 != 0 {
			t.Errorf("message %d has an unbalanced fence:\n%s", i, m.Content)
		}
		if m.Interaction != id {
			t.Errorf("message %d was not sent through the interaction: %+v", i, m)
		}
	}
}

// withoutFences drops fence lines and all white space, so texts split in
// different places compare equal.
func withoutFences(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "```") {
			b.WriteString(strings.Join(strings.Fields(line), ""))
		}
	}
	return b.String()
}

func TestStrangersFilesAreNotDownloaded(t *testing.T) {
	w := newWorld(t, discordtest.Options{}, Options{Inbox: core.Inbox{Dir: t.TempDir()}})
	w.fake.Post(discordtest.UserMessage{Channel: "c1", Guild: "g1", User: "u9", Content: "<@" + w.bot + "> look",
		Mentions: []string{w.bot}, Attachments: []discordtest.Attachment{{Name: "payload.bin", Data: []byte("a stranger's file")}}})
	if !w.fake.Wait(wait, func(v discordtest.View) bool {
		for _, m := range v.Messages("c1") {
			if strings.Contains(m.Content, "not allowed") {
				return true
			}
		}
		return false
	}) {
		t.Fatal("no refusal")
	}
	if n := len(w.fake.Calls("GET /attachments/")); n != 0 {
		t.Errorf("a stranger's attachment was downloaded %d times, want never", n)
	}
}

// TestApprovalButtons: a permission request is a message with buttons in
// the answer's thread; a stranger's click is answered privately (type 4,
// ephemeral) and decides nothing, the asker's is answered by updating the
// question to its outcome without buttons (type 7), a second click is
// told it came too late; nothing shown pings.
func TestApprovalButtons(t *testing.T) {
	w := newWorld(t, discordtest.Options{}, Options{})
	w.ask("u1", "c1", "!ask Bash {\"command\":\"echo @everyone <@u2>\"}\nran it")
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
	for _, want := range []string{`"label":"Allow"`, `"label":"Allow for this session"`, `"label":"Deny"`, `"style":4`} {
		if !strings.Contains(q.Components, want) {
			t.Errorf("components %s lack %s", q.Components, want)
		}
	}
	i := strings.Index(q.Components, "golem:allow:")
	allow := q.Components[i : i+len("golem:allow:")+8]
	click := func(user string) discordtest.Interaction {
		id := w.fake.Click(discordtest.Click{Guild: "g1", Channel: q.ChannelID, Message: q.ID, User: user, CustomID: allow})
		var in discordtest.Interaction
		if !w.fake.Wait(wait, func(v discordtest.View) bool { in, _ = v.Interaction(id); return in.Callback != 0 }) {
			t.Fatalf("the click of %s was not answered", user)
		}
		return in
	}
	if in := click("u9"); in.Callback != 4 || in.CallbackFlags&64 == 0 {
		t.Errorf("a stranger's click answered with type %d flags %d, want an ephemeral 4", in.Callback, in.CallbackFlags)
	}
	if in := click("u1"); in.Callback != 7 {
		t.Errorf("the asker's click answered with type %d, want 7", in.Callback)
	}
	if !w.fake.Wait(wait, func(v discordtest.View) bool {
		m, _ := v.Message(q.ID)
		return strings.Contains(m.Content, "allowed by") && !strings.Contains(m.Components, "golem:")
	}) {
		t.Error("the question was not updated to its outcome without buttons")
	}
	if in := click("u1"); in.Callback != 4 || in.CallbackFlags&64 == 0 {
		t.Errorf("a double click answered with type %d flags %d, want an ephemeral 4", in.Callback, in.CallbackFlags)
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
