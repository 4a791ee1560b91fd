package telegram

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/telegram/telegramtest"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/internal/bottest"
	"github.com/golem-chat/golem/store"
)

// stack is the whole bot: the real library against the fake Bot API and
// golem wired as `bot serve` wires it (internal/bottest). Each up is one
// run of the bot over the same store, workspace and agent log.
type stack struct {
	t     testing.TB
	s     *telegramtest.Server
	dir   string // workspace
	log   string // the fake agent's log
	db    string
	scope core.Scope
	allow []string // default telegram:42
	// queueDepth is the dispatcher's QueueDepth (its default when 0).
	queueDepth int
	// busy is the dispatcher's Busy (steer where the engine can when "").
	busy core.Busy
	// context is the dispatcher's chat context (off when zero).
	context core.ContextLimits
	// agentEnv is added to the fake agent's environment.
	agentEnv map[string]string
	opts     Options
	bot      *bottest.Bot
}

func newStack(t testing.TB, fake telegramtest.Options) *stack {
	dir := t.TempDir()
	st := &stack{t: t, s: telegramtest.New(t, fake), dir: dir, log: filepath.Join(dir, "agent.log"), db: filepath.Join(t.TempDir(), "golem.db")}
	st.allow = []string{"telegram:42"}
	return st
}

// up starts store, dispatcher and adapter; stop (also run at cleanup)
// stops them in the order the bot does.
func (st *stack) up() *Adapter {
	t := st.t
	st.bot = bottest.New(t, bottest.Options{
		DB: st.db, Workspace: st.dir, AgentLog: st.log, Scope: st.scope, Allow: st.allow, MaxConcurrent: 100, AgentEnv: st.agentEnv,
		Tune: func(o *core.Options) { o.QueueDepth, o.Context, o.Busy = st.queueDepth, st.context, st.busy },
	})
	opts := st.opts
	opts.Token, opts.APIURL, opts.State = st.s.Token(), st.s.URL, st.bot.Store
	opts.Inbox = core.Inbox{Dir: filepath.Join(st.dir, "inbox")}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	st.bot.Start(a)
	return a
}

func (st *stack) stop() { st.bot.Stop() }

func (st *stack) invocations() []enginetest.Invocation { return enginetest.ReadLog(st.t, st.log) }

func prompt(inv enginetest.Invocation) string { return inv.Prompt }

// waitText waits until the bot's messages in chat include one whose
// visible text contains want, and returns it.
func (st *stack) waitText(chat int64, want string) telegramtest.Message {
	st.t.Helper()
	var found telegramtest.Message
	st.s.WaitUntil(st.t, 20*time.Second, "a bot message containing "+strconv.Quote(want), func() bool {
		for _, m := range st.s.BotMessages(chat) {
			if strings.Contains(m.Text, want) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

func TestE2EDirectMessageStreamsAndResumes(t *testing.T) {
	st := newStack(t, telegramtest.Options{EnforceRates: true})
	st.up()
	st.s.PushPrivate(ann, "!tool Bash {\"command\":\"go test ./...\"}\n!delta-rate 30ms 100")
	final := strings.Repeat("x", 100)
	answer := st.waitText(42, final)
	if answer.Edits < 1 {
		t.Errorf("the answer was never edited: %+v", answer)
	}
	var tool telegramtest.Message
	for _, m := range st.s.BotMessages(42) {
		if strings.Contains(m.Text, "Bash") {
			tool = m
		}
	}
	if tool.ReplyTo != answer.ID || !strings.Contains(tool.Text, "go test ./...") {
		t.Fatalf("tool activity %+v is not a reply to the answer %d", tool, answer.ID)
	}
	if answer.Text != final {
		t.Fatalf("final answer %q", answer.Text)
	}
	st.s.PushPrivate(ann, "second question")
	st.waitText(42, "echo: second question")
	inv := st.invocations()
	if len(inv) != 2 {
		t.Fatalf("%d agent runs, want 2", len(inv))
	}
	if id, ok := inv[1].Flag("--resume"); !ok || id != inv[0].SessionID {
		t.Fatalf("second run resumes %q, want the first session %q", id, inv[0].SessionID)
	}
	if n := st.s.RateLimited(); n != 0 {
		t.Errorf("the fake answered 429 %d times", n)
	}
	if len(st.s.Calls("sendChatAction")) == 0 {
		t.Error("no typing action while the turn ran")
	}
}

func TestE2EStopAndNew(t *testing.T) {
	st := newStack(t, telegramtest.Options{})
	st.up()
	st.s.PushPrivate(ann, "first")
	st.waitText(42, "echo: first")
	st.s.PushPrivate(ann, "!sleep 60s") // (!hang deadlocks the fake agent today)
	st.s.WaitUntil(t, 20*time.Second, "the sleeping run", func() bool { return len(st.invocations()) == 2 })
	st.s.PushPrivate(ann, "/stop")
	st.waitText(42, "Stopped")
	st.s.PushPrivate(ann, "/new")
	n := len(st.s.BotMessages(42))
	st.s.WaitUntil(t, 20*time.Second, "the /new answer", func() bool { return len(st.s.BotMessages(42)) > n })
	st.s.PushPrivate(ann, "fresh start")
	st.waitText(42, "echo: fresh start")
	inv := st.invocations()
	if len(inv) != 3 {
		t.Fatalf("%d agent runs, want 3", len(inv))
	}
	if _, ok := inv[1].Flag("--resume"); !ok {
		t.Error("the second run did not resume")
	}
	if id, ok := inv[2].Flag("--resume"); ok {
		t.Errorf("the run after /new resumed %q", id)
	}
}

func TestE2EGroupMentionAndUnauthorized(t *testing.T) {
	st := newStack(t, telegramtest.Options{})
	a := st.up()
	const group = -100
	st.s.PushGroup(group, ann, "just talking")
	p := st.s.PushGroup(group, ann, "@golem_bot ping")
	answer := st.waitText(group, "echo: ping")
	if got := a.ChannelName("-100"); got != "Group 100" { // for the operator's view
		t.Errorf("the group's name %q, want its title", got)
	}
	if got := a.ChannelName("42"); got != "" {
		t.Errorf("a private chat is named %q", got)
	}
	if answer.ReplyTo != p.MessageID {
		t.Errorf("the group answer replies to %d, want the question %d", answer.ReplyTo, p.MessageID)
	}
	eve := telegramtest.User{ID: 99, Username: "eve"}
	st.s.PushPrivate(eve, "rm -rf /")
	st.s.WaitUntil(t, 20*time.Second, "a refusal", func() bool { return len(st.s.BotMessages(99)) == 1 })
	st.s.PushPrivate(ann, "sentinel")
	st.waitText(42, "echo: sentinel")
	inv := st.invocations()
	if len(inv) != 2 || prompt(inv[0]) != "ping" {
		t.Fatalf("agent runs %d (first prompt %q), want ping and sentinel only", len(inv), prompt(inv[0]))
	}
}

func TestE2EForumTopicsAreConversations(t *testing.T) {
	st := newStack(t, telegramtest.Options{})
	st.scope = core.ScopeThread
	st.opts.GroupInterval = 1100 * time.Millisecond // the fake does not enforce 20/min
	st.up()
	const group = -300
	st.s.PushTopic(group, 77, ann, "@golem_bot in seventy-seven")
	a77 := st.waitText(group, "echo: in seventy-seven")
	st.s.PushTopic(group, 88, ann, "@golem_bot in eighty-eight")
	a88 := st.waitText(group, "echo: in eighty-eight")
	st.s.PushTopic(group, 77, ann, "@golem_bot again")
	st.waitText(group, "echo: again")
	if a77.Thread != 77 || a88.Thread != 88 {
		t.Fatalf("answers in topics %d and %d", a77.Thread, a88.Thread)
	}
	inv := st.invocations()
	if len(inv) != 3 {
		t.Fatalf("%d runs", len(inv))
	}
	if _, ok := inv[1].Flag("--resume"); ok {
		t.Error("topic 88 resumed topic 77's session")
	}
	if id, _ := inv[2].Flag("--resume"); id != inv[0].SessionID {
		t.Errorf("topic 77's second message resumed %q, want %q", id, inv[0].SessionID)
	}
}

func TestE2EHTMLRejectedFallsBackToPlainText(t *testing.T) {
	st := newStack(t, telegramtest.Options{})
	st.up()
	st.s.Fail("", 100, telegramtest.Failure{HTMLOnly: true, Code: 400, Desc: "Bad Request: can't parse entities: Unsupported start tag \"b\" at byte offset 0"})
	st.s.PushPrivate(ann, "**bold** & <b>")
	m := st.waitText(42, "echo:")
	st.s.WaitUntil(t, 20*time.Second, "the final text", func() bool {
		ms := st.s.BotMessages(42)
		return len(ms) > 0 && ms[0].Text == "echo: bold & <b>"
	})
	if got := st.s.BotMessages(42)[0]; got.ParseMode != "" || got.ID != m.ID {
		t.Fatalf("answer %+v", got)
	}
}

func TestE2ERateLimitStormKeepsTheExactText(t *testing.T) {
	st := newStack(t, telegramtest.Options{})
	st.up()
	st.s.Fail("", 6, telegramtest.Failure{Code: 429, Desc: "Too Many Requests: retry after 1", RetryAfter: 1})
	st.s.PushPrivate(ann, "!delta-rate 20ms 120")
	want := strings.Repeat("x", 120)
	st.s.WaitUntil(t, 30*time.Second, "the exact final text", func() bool {
		ms := st.s.BotMessages(42)
		return len(ms) == 1 && ms[0].Text == want
	})
}

func TestE2ERestartNeitherLosesNorRepeats(t *testing.T) {
	st := newStack(t, telegramtest.Options{})
	st.up()
	st.s.PushPrivate(ann, "before restart")
	st.waitText(42, "echo: before restart")
	st.stop()
	st.s.PushPrivate(ann, "while down")

	// A crash between handling an update and saving the offset: the
	// update comes again; core deduplicates it by EventID.
	db, err := store.Open(st.db)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Save(offsetKey, []byte("1001")); err != nil {
		t.Fatal(err)
	}
	db.Close()

	st.up()
	st.waitText(42, "echo: while down")
	st.s.PushPrivate(ann, "sentinel")
	st.waitText(42, "echo: sentinel")
	var prompts []string
	for _, inv := range st.invocations() {
		prompts = append(prompts, prompt(inv))
	}
	if strings.Join(prompts, "|") != "before restart|while down|sentinel" {
		t.Fatalf("agent prompts %q", prompts)
	}
}

func TestE2EPhotoReachesTheAgent(t *testing.T) {
	st := newStack(t, telegramtest.Options{})
	st.up()
	st.s.PushPhoto(42, ann, "what is in it?", []byte("\xff\xd8fake jpeg"))
	st.waitText(42, "echo: what is in it?")
	inv := st.invocations()
	if len(inv) != 1 {
		t.Fatalf("%d runs", len(inv))
	}
	p := prompt(inv[0])
	_, list, ok := strings.Cut(p, "Attached files: ")
	if !ok {
		t.Fatalf("prompt names no file: %q", p)
	}
	path := strings.TrimSpace(strings.Split(list, ",")[0])
	if b, err := os.ReadFile(path); err != nil || string(b) != "\xff\xd8fake jpeg" {
		t.Fatalf("file %q: %q, %v", path, b, err)
	}
	if !strings.HasPrefix(path, filepath.Join(st.dir, "inbox")) {
		t.Fatalf("file %q is outside the inbox", path)
	}
}

func TestE2EDraftsStreamThenPostTheFinalText(t *testing.T) {
	st := newStack(t, telegramtest.Options{EnforceRates: true})
	st.opts.Drafts = true
	st.up()
	st.s.PushPrivate(ann, "!tool Bash {\"command\":\"ls\"}\n!delta-rate 20ms 120")
	final := strings.Repeat("x", 120)
	answer := st.waitText(42, final)
	if answer.Text != final || answer.Edits != 0 {
		t.Errorf("final answer %+v: want the exact text, posted once, never edited", answer)
	}
	drafts := st.s.Drafts(42)
	if len(drafts) < 2 {
		t.Fatalf("the answer streamed in %d drafts, want several", len(drafts))
	}
	for _, d := range drafts {
		if !strings.HasPrefix(final, d) {
			t.Errorf("draft %q is not a prefix of the answer", d)
		}
	}
	var tool telegramtest.Message
	for _, m := range st.s.BotMessages(42) {
		if strings.Contains(m.Text, "Bash") {
			tool = m
		}
	}
	if tool.ReplyTo == 0 || tool.ReplyTo == answer.ID {
		t.Errorf("tool activity %+v: want a reply to the user's message while the answer is a draft", tool)
	}
	if n := st.s.RateLimited(); n != 0 {
		t.Errorf("the fake answered 429 %d times", n)
	}
}

func TestE2EStrangersFilesAreNotDownloaded(t *testing.T) {
	st := newStack(t, telegramtest.Options{})
	st.up()
	eve := telegramtest.User{ID: 99, Username: "eve"}
	st.s.PushPhoto(99, eve, "look", []byte("\xff\xd8a stranger's photo"))
	st.s.WaitUntil(t, 20*time.Second, "a refusal", func() bool { return len(st.s.BotMessages(99)) == 1 })
	if n := len(st.s.Calls("getFile")); n != 0 {
		t.Errorf("getFile called %d times for a stranger's photo, want never", n)
	}
	if entries, _ := os.ReadDir(filepath.Join(st.dir, "inbox")); len(entries) != 0 {
		t.Errorf("the inbox holds %d files from a stranger", len(entries))
	}
}

// TestE2EApprovalButtons: a permission request is a reply with an inline
// keyboard; a stranger's click gets a toast and decides nothing, the
// asker's decides (toast, message edited to the outcome, keyboard gone),
// a second click is told it came too late; polling asks for
// callback_query updates.
func TestE2EApprovalButtons(t *testing.T) {
	st := newStack(t, telegramtest.Options{})
	st.up()
	st.s.PushPrivate(ann, "!ask Bash {\"command\":\"echo @everyone @ann\"}\nran it")
	q := st.waitText(42, "wants to run a command")
	var markup string
	for _, c := range st.s.Calls("sendMessage") {
		if strings.Contains(c.Params.Get("text"), "wants to run a command") {
			markup = c.Params.Get("reply_markup")
		}
	}
	for _, want := range []string{`"inline_keyboard"`, `"text":"Allow"`, `"text":"Allow for this session"`, `"text":"Deny"`, `"callback_data":"golem:allow:`} {
		if !strings.Contains(markup, want) {
			t.Fatalf("reply_markup %s lacks %s", markup, want)
		}
	}
	var allow string
	if i := strings.Index(markup, `"golem:allow:`); i >= 0 {
		allow = markup[i+1 : i+1+len("golem:allow:")+8]
	}
	toast := func(id string) string {
		var text string
		st.s.WaitUntil(t, 20*time.Second, "the toast of "+id, func() bool {
			for _, c := range st.s.Calls("answerCallbackQuery") {
				if c.Params.Get("callback_query_id") == id {
					text = c.Params.Get("text")
					return true
				}
			}
			return false
		})
		return text
	}
	stranger := telegramtest.User{ID: 666, FirstName: "Mallory"}
	if got := toast(st.s.PushCallback(42, stranger, int(q.ID), allow)); !strings.Contains(got, "Only the asker or an approver") {
		t.Errorf("the stranger's toast %q", got)
	}
	if got := toast(st.s.PushCallback(42, ann, int(q.ID), allow)); !strings.Contains(got, "allowed by") {
		t.Errorf("the asker's toast %q", got)
	}
	st.waitText(42, "echo: ran it")
	settled := st.waitText(42, "✅ Bash allowed by")
	if settled.ID != q.ID || settled.Edits < 1 {
		t.Errorf("the question was not edited to the outcome: %+v", settled)
	}
	for _, c := range st.s.Calls("editMessageText") {
		if c.Params.Get("message_id") == strconv.FormatInt(q.ID, 10) && c.Params.Get("reply_markup") != "" {
			t.Errorf("the settled question keeps a keyboard: %v", c.Params)
		}
	}
	if got := toast(st.s.PushCallback(42, ann, int(q.ID), allow)); !strings.Contains(got, "already answered") {
		t.Errorf("a double click's toast %q", got)
	}
	for _, c := range st.s.Calls("getUpdates") {
		if !strings.Contains(c.Params.Get("allowed_updates"), "callback_query") {
			t.Fatalf("getUpdates without callback_query: %v", c.Params)
		}
	}
}
