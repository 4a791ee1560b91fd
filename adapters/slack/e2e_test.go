package slack

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/slack/slacktest"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/internal/bottest"
)

// bot is golem wired as `bot serve` wires it (internal/bottest) with the
// Slack adapter connected to a fake Slack through the real slack-go client.
type bot struct {
	*bottest.Bot
	t    testing.TB
	fake *slacktest.Server
}

type botConfig struct {
	db    string // store file; default a fresh one
	scope core.Scope
	edit  func(*Options)
	// maxConcurrent bounds turns at once (the dispatcher's default if 0).
	maxConcurrent int
	// tune has the last say on the dispatcher's options.
	tune func(*core.Options)
	// adapter, when set, adjusts the adapter before it starts.
	adapter func(*Adapter)
	// state, when set, wraps the store the adapter keeps its journal in.
	state func(core.StateStore) core.StateStore
	// agentEnv is added to the fake agent's environment.
	agentEnv map[string]string
}

// startBot starts golem against fake and waits until its socket is open.
func startBot(t testing.TB, fake *slacktest.Server, agentLog string, cfg botConfig) *bot {
	t.Helper()
	b := &bot{t: t, fake: fake, Bot: bottest.New(t, bottest.Options{
		DB: cfg.db, AgentLog: agentLog, Scope: cfg.scope, Allow: []string{"slack:U1"}, MaxConcurrent: cfg.maxConcurrent,
		Tune: cfg.tune, AgentEnv: cfg.agentEnv,
	})}
	opts := Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: fake.URL,
		Inbox: core.Inbox{Dir: t.TempDir()}, State: b.Store, Logger: b.Log}
	if cfg.state != nil {
		opts.State = cfg.state(b.Store)
	}
	if cfg.edit != nil {
		cfg.edit(&opts)
	}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.adapter != nil {
		cfg.adapter(a)
	}
	connects := fake.Connects()
	b.Start(a)
	if !fake.Wait(20*time.Second, func() bool { return fake.Connects() > connects && fake.Open() == 1 }) {
		t.Fatal("golem did not connect to the fake Slack")
	}
	return b
}

func (b *bot) stop() { b.Stop() }

// say delivers an event from user U1 (allowed) unless ev names a user.
func (b *bot) say(ev slacktest.Event) slacktest.Delivery {
	b.t.Helper()
	if ev.User == "" {
		ev.User = "U1"
	}
	d, err := b.fake.Deliver(ev)
	if err != nil {
		b.t.Fatal(err)
	}
	return d
}

// answer waits until a bot message in channel reads exactly text and the
// working reaction is gone from the message at ts, and returns the answer.
func (b *bot) answer(channel, ts, text string) slacktest.Message {
	b.t.Helper()
	var found slacktest.Message
	ok := b.fake.Wait(30*time.Second, func() bool {
		if m, _ := b.fake.Message(channel, ts); len(m.Reactions) != 0 {
			return false
		}
		for _, m := range b.fake.BotMessages(channel) {
			if m.Text == text {
				found = m
				return true
			}
		}
		return false
	})
	if !ok {
		var texts []string
		for _, m := range b.fake.BotMessages(channel) {
			texts = append(texts, m.Text)
		}
		b.t.Fatalf("no answer %q in %s; bot messages: %q", text, channel, texts)
	}
	return found
}

// runs returns the fake agent's invocations so far.
func (b *bot) runs() []enginetest.Invocation { return b.Invocations() }

func newE2E(t *testing.T, cfg botConfig) *bot {
	fake := slacktest.New(slacktest.Options{PingInterval: time.Second})
	t.Cleanup(fake.Close)
	return startBot(t, fake, filepath.Join(t.TempDir(), "agent.log"), cfg)
}

func TestE2EMentionAnswersByEditsWithToolsInThread(t *testing.T) {
	b := newE2E(t, botConfig{})
	d := b.say(slacktest.Event{Channel: "C1",
		Text: mention + " !tool Bash {\"command\":\"go test ./...\"}\n!delta-rate 10ms 250\n!tool Read {\"file_path\":\"core/dispatch.go\"}\ndone"})
	want := strings.Repeat("x", 250) + "\n\necho: done"
	ans := b.answer("C1", d.TS, want)
	if ans.ThreadTS != "" {
		t.Errorf("the answer to a top-level mention is in thread %q", ans.ThreadTS)
	}
	t.Logf("the answer grew by %d edits", ans.Edits)
	if ans.Edits < 2 {
		t.Errorf("the answer grew by %d edits, want it to grow by several", ans.Edits)
	}
	var activity []string
	for _, m := range b.fake.BotMessages("C1") {
		if m.TS != ans.TS {
			if m.ThreadTS != ans.TS {
				t.Errorf("bot message %q has thread_ts %q, want the answer's %q", m.Text, m.ThreadTS, ans.TS)
			}
			activity = append(activity, m.Text)
		}
	}
	all := strings.Join(activity, "\n")
	if !strings.Contains(all, "*Bash*") || !strings.Contains(all, "go test ./...") || !strings.Contains(all, "core/dispatch.go") {
		t.Errorf("tool activity in the thread = %q", activity)
	}
	if n := b.fake.Count("reactions.add", 200); n != 1 {
		t.Errorf("%d working reactions added", n)
	}

	// The next mention in the channel resumes the agent's session.
	d2 := b.say(slacktest.Event{Channel: "C1", Text: mention + " again"})
	b.answer("C1", d2.TS, "echo: again")
	runs := b.runs()
	if len(runs) != 2 {
		t.Fatalf("%d agent runs, want 2", len(runs))
	}
	if id, ok := runs[1].Flag("--resume"); !ok || id != runs[0].SessionID || id == "" {
		t.Errorf("second run resumes %q (%v), want the first run's session %q", id, ok, runs[0].SessionID)
	}
}

func TestE2EMentionInThread(t *testing.T) {
	b := newE2E(t, botConfig{})
	parent := b.say(slacktest.Event{Type: "message", ChannelType: "channel", Channel: "C1", Text: "a question for everyone"})
	d := b.say(slacktest.Event{Channel: "C1", ThreadTS: parent.TS, Text: mention + " !tool Bash {\"command\":\"ls\"}\nhere"})
	ans := b.answer("C1", d.TS, "echo: here")
	if ans.ThreadTS != parent.TS {
		t.Fatalf("answer thread_ts %q, want the thread %q", ans.ThreadTS, parent.TS)
	}
	for _, m := range b.fake.BotMessages("C1") {
		if m.ThreadTS != parent.TS {
			t.Errorf("bot message %q outside the thread (thread_ts %q)", m.Text, m.ThreadTS)
		}
	}
	if len(b.fake.BotMessages("C1")) < 2 {
		t.Error("no tool activity in the thread")
	}
}

func TestE2EThreadScope(t *testing.T) {
	b := newE2E(t, botConfig{scope: core.ScopeThread})
	d := b.say(slacktest.Event{Channel: "C1", Text: mention + " first"})
	ans := b.answer("C1", d.TS, "echo: first")
	if ans.ThreadTS != d.TS {
		t.Fatalf("answer thread_ts %q, want a thread on the mention %q", ans.ThreadTS, d.TS)
	}
	d2 := b.say(slacktest.Event{Channel: "C1", ThreadTS: d.TS, Text: mention + " second"})
	b.answer("C1", d2.TS, "echo: second")
	d3 := b.say(slacktest.Event{Channel: "C1", Text: mention + " elsewhere"})
	b.answer("C1", d3.TS, "echo: elsewhere")
	runs := b.runs()
	if len(runs) != 3 {
		t.Fatalf("%d runs", len(runs))
	}
	if id, _ := runs[1].Flag("--resume"); id != runs[0].SessionID {
		t.Errorf("a mention in the thread did not resume its session")
	}
	if _, ok := runs[2].Flag("--resume"); ok {
		t.Errorf("a new top-level mention resumed a session under thread scope")
	}
}

func TestE2EDirectMessage(t *testing.T) {
	b := newE2E(t, botConfig{})
	d := b.say(slacktest.Event{Type: "message", ChannelType: "im", Channel: "D1", Text: "hello in private"})
	ans := b.answer("D1", d.TS, "echo: hello in private")
	if ans.ThreadTS != "" {
		t.Errorf("DM answer in a thread %q", ans.ThreadTS)
	}
}

func TestE2EStop(t *testing.T) {
	b := newE2E(t, botConfig{})
	for _, stop := range []func(){
		func() { b.say(slacktest.Event{Channel: "C1", Text: mention + " /stop"}) },
		func() {
			if _, err := b.fake.SlashCommand("U1", "C1", "/golem", "stop"); err != nil {
				t.Fatal(err)
			}
		},
	} {
		runs := len(b.runs())
		d := b.say(slacktest.Event{Channel: "C1", Text: mention + " !text 30\n!hang"})
		if !b.fake.Wait(30*time.Second, func() bool { return len(b.runs()) == runs+1 }) {
			t.Fatal("the agent did not start")
		}
		// Stop once the whole partial answer shows: under load the agent
		// may still be writing it when it has started.
		if !b.fake.Wait(30*time.Second, func() bool {
			for _, m := range b.fake.BotMessages("C1") {
				if m.Text == "the quick brown fox jumps over" {
					return true
				}
			}
			return false
		}) {
			t.Fatalf("the partial answer never showed; bot messages: %+v", b.fake.BotMessages("C1"))
		}
		stop()
		b.answer("C1", d.TS, "the quick brown fox jumps over\n\n⏹️ _Stopped._")
	}
}

func TestE2EUnauthorizedUser(t *testing.T) {
	b := newE2E(t, botConfig{})
	d := b.say(slacktest.Event{User: "U666", Channel: "C1", Text: mention + " rm -rf /"})
	if !b.fake.Wait(30*time.Second, func() bool {
		for _, m := range b.fake.BotMessages("C1") {
			if strings.Contains(m.Text, "not allowed") && strings.Contains(m.Text, "slack:U666") {
				return true
			}
		}
		return false
	}) {
		t.Fatal("no refusal")
	}
	// An allowed message afterwards is answered, and only it ran.
	d2 := b.say(slacktest.Event{Channel: "C1", Text: mention + " hi"})
	b.answer("C1", d2.TS, "echo: hi")
	if runs := b.runs(); len(runs) != 1 {
		t.Errorf("%d agent runs, want only the allowed user's", len(runs))
	}
	if n := len(b.fake.BotMessages("C1")); n != 2 {
		t.Errorf("%d bot messages, want the refusal and one answer", n)
	}
	if m, _ := b.fake.Message("C1", d.TS); len(m.Reactions) != 0 {
		t.Error("the refused message got a working reaction")
	}
}

func TestE2ERedeliveredEventAnsweredOnce(t *testing.T) {
	fake := slacktest.New(slacktest.Options{PingInterval: time.Second})
	defer fake.Close()
	agentLog := filepath.Join(t.TempDir(), "agent.log")
	db := filepath.Join(t.TempDir(), "golem.db")
	b := startBot(t, fake, agentLog, botConfig{db: db})
	d := b.say(slacktest.Event{Channel: "C1", Text: mention + " once"})
	b.answer("C1", d.TS, "echo: once")
	if _, err := fake.Redeliver(d); err != nil {
		t.Fatal(err)
	}
	// Turns of one channel run in order: once the next mention is answered,
	// a duplicate turn would have run before it.
	s := b.say(slacktest.Event{Channel: "C1", Text: mention + " sentinel"})
	b.answer("C1", s.TS, "echo: sentinel")
	if n := len(b.runs()); n != 2 {
		t.Fatalf("%d agent runs after a redelivery, want 2", n)
	}

	// After a restart on the same store file, the event is still known.
	b.stop()
	b2 := startBot(t, fake, agentLog, botConfig{db: db})
	if _, err := fake.Redeliver(d); err != nil {
		t.Fatal(err)
	}
	s2 := b2.say(slacktest.Event{Channel: "C1", Text: mention + " after restart"})
	b2.answer("C1", s2.TS, "echo: after restart")
	if n := len(b2.runs()); n != 3 {
		t.Fatalf("%d agent runs after a redelivery across a restart, want 3", n)
	}
	if n := strings.Count(joinTexts(fake.BotMessages("C1")), "echo: once"); n != 1 {
		t.Fatalf("the event was answered %d times", n)
	}
}

func joinTexts(ms []slacktest.Message) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.Text + "\n")
	}
	return b.String()
}

func TestE2ERateLimitStorm(t *testing.T) {
	b := newE2E(t, botConfig{})
	const storm = 5
	b.fake.Fail("chat.update", storm, slacktest.Failure{Status: 429, RetryAfter: 1})
	d := b.say(slacktest.Event{Channel: "C1", Text: mention + " !delta-rate 10ms 200"})
	ans := b.answer("C1", d.TS, strings.Repeat("x", 200))
	calls := b.fake.Calls("chat.update")
	limited := 0
	for i, c := range calls {
		if c.Status != 429 {
			continue
		}
		limited++
		if i+1 < len(calls) && calls[i+1].At.Sub(c.At) < time.Second {
			t.Errorf("chat.update retried %v after a 429 with Retry-After: 1", calls[i+1].At.Sub(c.At))
		}
	}
	if limited != storm {
		t.Fatalf("%d calls were rate limited, want %d", limited, storm)
	}
	// Without the storm the 2 s answer takes two or three edits; with five
	// seconds of 429s the streamer coalesces everything into one or two.
	t.Logf("%d edits landed, %d chat.update calls", ans.Edits, len(calls))
	if ans.Edits > 2 {
		t.Errorf("%d edits landed during a 429 storm, want the streamer to coalesce", ans.Edits)
	}
}

func TestE2EReconnect(t *testing.T) {
	b := newE2E(t, botConfig{})
	d := b.say(slacktest.Event{Channel: "C1", Text: mention + " before"})
	b.answer("C1", d.TS, "echo: before")
	b.fake.DropSockets()
	if !b.fake.Wait(30*time.Second, func() bool { return b.fake.Connects() == 2 && b.fake.Open() == 1 }) {
		t.Fatal("no reconnect")
	}
	d2 := b.say(slacktest.Event{Channel: "C1", Text: mention + " after"})
	b.answer("C1", d2.TS, "echo: after")
}

func TestE2EAttachment(t *testing.T) {
	b := newE2E(t, botConfig{})
	f := b.fake.AddFile("report.txt", "text/plain", []byte("quarterly numbers"))
	d := b.say(slacktest.Event{Channel: "C1", Text: mention + " summarize", Files: []map[string]any{f}})
	if !b.fake.Wait(30*time.Second, func() bool {
		for _, m := range b.fake.BotMessages("C1") {
			if strings.HasPrefix(m.Text, "echo: summarize") && strings.Contains(m.Text, "report.txt") {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no answer naming the attachment: %q", joinTexts(b.fake.BotMessages("C1")))
	}
	if b.fake.Downloads(f["id"].(string)) != 1 {
		t.Error("the file was not downloaded once")
	}
	_ = d
}

func TestE2ELongAnswerContinuesWithFencesIntact(t *testing.T) {
	b := newE2E(t, botConfig{})
	d := b.say(slacktest.Event{Channel: "C1", Text: mention + " !fence"})
	if !b.fake.Wait(30*time.Second, func() bool {
		m, _ := b.fake.Message("C1", d.TS)
		return len(m.Reactions) == 0 && len(b.runs()) == 1 && strings.Contains(joinTexts(b.fake.BotMessages("C1")), "a test for it as well.")
	}) {
		t.Fatalf("the long answer did not finish: %q", joinTexts(b.fake.BotMessages("C1")))
	}
	var top []slacktest.Message
	for _, m := range b.fake.BotMessages("C1") {
		if m.ThreadTS == "" {
			top = append(top, m)
		}
	}
	if len(top) < 2 {
		t.Fatalf("%d answer messages, want the answer continued in a second one", len(top))
	}
	for i, m := range top {
		if n := len([]rune(m.Text)); n > 4000 {
			t.Errorf("message %d has %d characters", i, n)
		}
		if strings.Count(m.Text, "```")%2 != 0 {
			t.Errorf("message %d leaves a code fence open:\n%s", i, m.Text)
		}
	}
}

func TestE2EStrangersFilesAreNotDownloaded(t *testing.T) {
	b := newE2E(t, botConfig{})
	f := b.fake.AddFile("payload.bin", "application/octet-stream", []byte("a stranger's file"))
	b.say(slacktest.Event{User: "U666", Channel: "C1", Text: mention + " look", Files: []map[string]any{f}})
	if !b.fake.Wait(30*time.Second, func() bool {
		return strings.Contains(joinTexts(b.fake.BotMessages("C1")), "not allowed")
	}) {
		t.Fatal("no refusal")
	}
	if n := b.fake.Downloads(f["id"].(string)); n != 0 {
		t.Errorf("a stranger's file was downloaded %d times, want never", n)
	}
}

// TestE2EApprovalButtons: a permission request is a Block Kit message with
// buttons; a stranger's click is acked and answered privately, the asker's
// decides and the message is updated to the outcome without buttons, a
// second click is refused; mentions in the shown command never ping.
func TestE2EApprovalButtons(t *testing.T) {
	b := newE2E(t, botConfig{})
	b.say(slacktest.Event{Channel: "C1", Text: mention + " !ask Bash {\"command\":\"echo <!channel> <@U2>\"}\nran it"})
	var q slacktest.Message
	if !b.fake.Wait(20*time.Second, func() bool {
		for _, m := range b.fake.BotMessages("C1") {
			if strings.Contains(m.Blocks, `"actions"`) {
				q = m
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no question with buttons; bot messages: %+v", b.fake.BotMessages("C1"))
	}
	for _, want := range []string{`"Allow"`, `"Allow for this session"`, `"Deny"`, `"style":"danger"`, `golem:allow:`} {
		if !strings.Contains(q.Blocks, want) {
			t.Errorf("blocks %s lack %s", q.Blocks, want)
		}
	}
	if strings.Contains(q.Blocks, "<!channel>") || strings.Contains(q.Blocks, "<@U2>") || strings.Contains(q.Text, "<!channel>") {
		t.Errorf("the question pings: %s / %q", q.Blocks, q.Text)
	}
	i := strings.Index(q.Blocks, "golem:allow:")
	allow := q.Blocks[i : i+len("golem:allow:")+8]
	click := func(user string) slacktest.Delivery {
		d, err := b.fake.Click(user, "C1", q.ThreadTS, q.TS, allow)
		if err != nil {
			t.Fatal(err)
		}
		if !b.fake.Wait(5*time.Second, func() bool { _, ok := b.fake.Acked(d.EnvelopeID); return ok }) {
			t.Fatalf("the click of %s was not acked", user)
		}
		return d
	}
	ephemerals := func() int { return len(b.fake.Calls("chat.postEphemeral")) }
	click("U9")
	if !b.fake.Wait(20*time.Second, func() bool { return ephemerals() == 1 }) {
		t.Fatal("the stranger got no private refusal")
	}
	if c := b.fake.Calls("chat.postEphemeral")[0]; c.Args["user"] != "U9" || !strings.Contains(c.Args["text"], "Only the asker or an approver") {
		t.Errorf("refusal %+v", c.Args)
	}
	click("U1")
	b.answer("C1", "", "echo: ran it")
	if !b.fake.Wait(20*time.Second, func() bool {
		m, _ := b.fake.Message("C1", q.TS)
		return strings.Contains(m.Text, "allowed by") && !strings.Contains(m.Blocks, `"actions"`)
	}) {
		m, _ := b.fake.Message("C1", q.TS)
		t.Fatalf("the question was not updated to the outcome: %+v", m)
	}
	click("U1")
	if !b.fake.Wait(20*time.Second, func() bool { return ephemerals() == 2 }) {
		t.Fatal("a double click was not refused")
	}
	if c := b.fake.Calls("chat.postEphemeral")[1]; !strings.Contains(c.Args["text"], "already answered") {
		t.Errorf("double-click refusal %+v", c.Args)
	}
}

// TestE2EGolemHelpListsEveryCommand: /golem help, Slack's command menu,
// names every command core answers.
func TestE2EGolemHelpListsEveryCommand(t *testing.T) {
	b := newE2E(t, botConfig{})
	if _, err := b.fake.SlashCommand("U1", "C1", "/golem", "help"); err != nil {
		t.Fatal(err)
	}
	var help string
	if !b.fake.Wait(30*time.Second, func() bool {
		for _, m := range b.fake.BotMessages("C1") {
			if strings.Contains(m.Text, "Commands:") {
				help = m.Text
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no help answer; bot messages: %+v", b.fake.BotMessages("C1"))
	}
	for _, c := range core.Commands() {
		if !strings.Contains(help, "`/"+c.Name+"`") {
			t.Errorf("/golem help lacks /%s:\n%s", c.Name, help)
		}
	}
}
