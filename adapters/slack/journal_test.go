package slack

import (
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/slack/slacktest"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/nettest"
	"github.com/golem-chat/golem/store"
)

// restartable is a fake Slack and the files a bot restarted on it keeps:
// its store and the fake agent's log.
type restartable struct {
	fake     *slacktest.Server
	db       string
	agentLog string
}

func newRestartable(t *testing.T) restartable {
	fake := slacktest.New(slacktest.Options{PingInterval: time.Second})
	t.Cleanup(fake.Close)
	dir := t.TempDir()
	return restartable{fake: fake, db: filepath.Join(dir, "golem.db"), agentLog: filepath.Join(dir, "agent.log")}
}

// start starts golem on the fake with the store. Messages while an answer
// runs wait for their own turn (busy: queue), so that each is a run.
func (r restartable) start(t *testing.T, cfg botConfig) *bot {
	cfg.db = r.db
	cfg.tune = func(o *core.Options) { o.Busy = core.BusyQueue }
	return startBot(t, r.fake, r.agentLog, cfg)
}

func im(text string) slacktest.Event {
	return slacktest.Event{Type: "message", ChannelType: "im", Channel: "D1", Text: text}
}

// journaled reports whether the store's journal holds the event.
func journaled(st core.StateStore, d slacktest.Delivery) bool {
	b, _ := st.Load(pendingKey)
	return strings.Contains(string(b), `"`+d.EventID+`"`)
}

// answers is how many times the bot's messages in channel say text (the
// answers of one DM may follow each other in one message).
func answers(fake *slacktest.Server, channel, text string) int {
	return strings.Count(joinTexts(fake.BotMessages(channel)), text)
}

// modelAnswers is how many times the bot has said, in a message or
// privately, that the model is set.
func modelAnswers(fake *slacktest.Server) int {
	n := 0
	for _, method := range []string{"chat.postMessage", "chat.postEphemeral"} {
		for _, c := range fake.Calls(method) {
			if c.Status == 200 && c.Error == "" && strings.Contains(c.Args["text"], "Model set to") {
				n++
			}
		}
	}
	return n
}

// waitAnswer waits until the bot has said text in channel.
func waitAnswer(t *testing.T, fake *slacktest.Server, channel, text string) {
	t.Helper()
	if !fake.Wait(30*time.Second, func() bool { return answers(fake, channel, text) > 0 }) {
		t.Fatalf("no answer %q in %s: %q", text, channel, joinTexts(fake.BotMessages(channel)))
	}
}

// golem stops hard (its context cancelled, the download cut short) while a
// message's file downloads and the next message of its channel waits
// behind it. Slack has had both envelopes acked and never sends them
// again; the next start on the same store hands both on from the journal,
// in order, downloading the file anew, and each is answered once.
func TestE2EKillWhileAFileDownloadsLosesNothing(t *testing.T) {
	r := newRestartable(t)
	net := nettest.NewStall("/files-pri/")
	f := r.fake.AddFile("notes.txt", "text/plain", []byte("the notes"))
	b := r.start(t, botConfig{edit: func(o *Options) { o.HTTPClient = net.Client() }})
	net.Hold()
	withFile := im("see the file")
	withFile.SubType, withFile.Files = "file_share", []map[string]any{f}
	d1 := b.say(withFile)
	net.WaitHeld(t, 1)
	d2 := b.say(im("and fix it"))
	d3, err := r.fake.SlashCommand("U1", "D1", "/golem", "model opus")
	if err != nil {
		t.Fatal(err)
	}
	if !r.fake.Wait(20*time.Second, func() bool {
		_, ok1 := r.fake.Acked(d1.EnvelopeID)
		_, ok2 := r.fake.Acked(d2.EnvelopeID)
		_, ok3 := r.fake.Acked(d3.EnvelopeID)
		return ok1 && ok2 && ok3
	}) {
		t.Fatal("the envelopes were not acked")
	}
	for _, d := range []slacktest.Delivery{d1, d2} { // saved before the ack
		if !journaled(b.Store, d) {
			t.Fatalf("event %s acked but not journaled", d.EventID)
		}
	}
	if j, _ := b.Store.Load(pendingKey); !strings.Contains(string(j), `"model opus"`) {
		t.Fatalf("the slash command acked but not journaled: %s", j)
	}
	b.stop()
	if runs := b.runs(); len(runs) != 0 {
		t.Fatalf("the agent ran %d times before the restart", len(runs))
	}

	b = r.start(t, botConfig{})
	b.say(im("sentinel"))
	waitAnswer(t, r.fake, "D1", "echo: sentinel")
	prompts := make([]string, 0, 3)
	for _, inv := range b.runs() {
		prompts = append(prompts, inv.Prompt)
	}
	if len(prompts) != 3 || !strings.HasPrefix(prompts[0], "see the file") || !strings.Contains(prompts[0], "notes.txt") ||
		prompts[1] != "and fix it" || prompts[2] != "sentinel" {
		t.Fatalf("after the restart the agent was asked %q, want the file's message with its file, \"and fix it\", then the sentinel", prompts)
	}
	if n := answers(r.fake, "D1", "echo: see the file"); n != 1 {
		t.Errorf("the file's message was answered %d times, want once", n)
	}
	if n := answers(r.fake, "D1", "echo: and fix it"); n != 1 {
		t.Errorf("the message behind it was answered %d times, want once", n)
	}
	if n := r.fake.Downloads(f["id"].(string)); n != 1 {
		t.Errorf("the file was downloaded %d times, want once (after the restart)", n)
	}
	r.fake.Wait(20*time.Second, func() bool { return modelAnswers(r.fake) > 0 })
	if n := modelAnswers(r.fake); n != 1 {
		t.Errorf("the slash command behind them was answered %d times, want once", n)
	}
	b.stop()
	if j := storedJournal(t, r.db); j != nil {
		t.Errorf("the journal still holds %s", j)
	}
}

// frozen is a store whose writes stop landing once it is frozen, as when
// golem is killed right after an event reached the handler, before the
// journal struck it.
type frozen struct {
	core.StateStore
	on atomic.Bool
}

func (f *frozen) Save(key string, value []byte) error {
	if f.on.Load() {
		return nil
	}
	return f.StateStore.Save(key, value)
}

// A journaled message that had reached the handler before golem died is
// replayed at the next start, and dropped there: it is not answered twice.
func TestE2EAReplayedMessageThatWasHandledIsNotAnsweredTwice(t *testing.T) {
	r := newRestartable(t)
	net := nettest.NewStall("/files-pri/")
	f := r.fake.AddFile("notes.txt", "text/plain", []byte("the notes"))
	st := &frozen{}
	b := r.start(t, botConfig{
		edit:  func(o *Options) { o.HTTPClient = net.Client() },
		state: func(s core.StateStore) core.StateStore { st.StateStore = s; return st },
	})
	net.Hold()
	withFile := im("see the file")
	withFile.SubType, withFile.Files = "file_share", []map[string]any{f}
	d := b.say(withFile)
	net.WaitHeld(t, 1)
	if !r.fake.Wait(20*time.Second, func() bool { _, ok := r.fake.Acked(d.EnvelopeID); return ok }) || !journaled(st, d) {
		t.Fatal("the message was not acked and journaled")
	}
	st.on.Store(true) // the strike after Handle never lands
	net.Release()
	waitAnswer(t, r.fake, "D1", "echo: see the file")
	if !journaled(st, d) {
		t.Fatal("the journal lost the message before the restart: the test would prove nothing")
	}
	b.stop()

	b = r.start(t, botConfig{})
	b.say(im("sentinel")) // behind the replayed message in its channel
	waitAnswer(t, r.fake, "D1", "echo: sentinel")
	if n := answers(r.fake, "D1", "echo: see the file"); n != 1 {
		t.Errorf("the file's message was answered %d times, want once", n)
	}
	if runs := b.runs(); len(runs) != 2 {
		t.Errorf("the agent ran %d times, want twice (the file's message, the sentinel)", len(runs))
	}
	b.stop()
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
