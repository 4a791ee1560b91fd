package slack

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/slack/slacktest"
)

// streamedAnswer checks that ans, in channel, is a streamed reply in the
// thread of the message at asked, stopped, never redrawn with chat.update.
func streamedAnswer(t *testing.T, b *bot, channel, asked string, ans slacktest.Message) {
	t.Helper()
	if !b.fake.Wait(10*time.Second, func() bool { m, _ := b.fake.Message(channel, ans.TS); return !m.Streaming }) {
		t.Fatal("the answer's stream was never stopped")
	}
	streamed := slices.ContainsFunc(b.fake.Calls("chat.startStream"), func(c slacktest.Call) bool {
		return c.Args["channel"] == channel && c.Args["thread_ts"] == asked && c.Error == ""
	})
	if !streamed || ans.ThreadTS != asked || ans.Edits != 0 {
		t.Errorf("the answer: streamed %v, thread %q, %d edits; want a streamed reply in %q, never updated", streamed, ans.ThreadTS, ans.Edits, asked)
	}
}

// TestE2ENativeApprovalInAChannel: in a channel, with task cards, a
// permission request is its own message with buttons in the answer's
// thread (a posted message, not part of the stream); once allowed by a
// click it is settled, and the answer ends streamed with its exact text.
func TestE2ENativeApprovalInAChannel(t *testing.T) {
	b := newE2E(t, botConfig{edit: tasks})
	d := b.say(slacktest.Event{Channel: "C1", Text: mention + " !text 20\n!ask Bash {\"command\":\"ls\"}\nran it"})
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
	if q.ThreadTS != d.TS || q.Streaming || len(b.fake.Calls("chat.startStream")) != 1 {
		t.Errorf("the question: thread %q, streaming %v, %d streams; want its own posted message in %q",
			q.ThreadTS, q.Streaming, len(b.fake.Calls("chat.startStream")), d.TS)
	}
	i := strings.Index(q.Blocks, "golem:allow:")
	if _, err := b.fake.Click("U1", "C1", q.ThreadTS, q.TS, q.Blocks[i:i+len("golem:allow:")+8]); err != nil {
		t.Fatal(err)
	}
	ans := b.answer("C1", d.TS, "the quick brown fox \n\necho: ran it")
	streamedAnswer(t, b, "C1", d.TS, ans)
	if !b.fake.Wait(10*time.Second, func() bool {
		m, _ := b.fake.Message("C1", q.TS)
		return strings.Contains(m.Text, "allowed by") && !strings.Contains(m.Blocks, `"actions"`)
	}) {
		t.Error("the question was not settled")
	}
	if ans, _ = b.fake.Message("C1", ans.TS); len(ans.Tasks) != 1 || ans.Tasks[0].Status != "complete" {
		t.Errorf("task cards %+v, want the allowed Bash call complete", ans.Tasks)
	}
}

// TestE2ENativeSteering: a mention while the answer streams is steered
// into the running turn (👀 on it), and the one streamed answer carries
// on with the exact text.
func TestE2ENativeSteering(t *testing.T) {
	b := newE2E(t, botConfig{edit: native})
	first := b.say(slacktest.Event{Channel: "C1", Text: mention + " !text 20\n!await\nfinal"})
	if !b.fake.Wait(30*time.Second, func() bool {
		ms := b.fake.BotMessages("C1")
		return len(ms) == 1 && strings.HasPrefix(ms[0].Text, "the quick") && ms[0].Streaming
	}) {
		t.Fatalf("the answer did not start streaming: %+v", b.fake.BotMessages("C1"))
	}
	second := b.say(slacktest.Event{Channel: "C1", Text: mention + " also this"})
	ans := b.answer("C1", first.TS, "the quick brown fox heard: also thisecho: final")
	streamedAnswer(t, b, "C1", first.TS, ans)
	if m, _ := b.fake.Message("C1", second.TS); !slices.Equal(m.Reactions, []string{ackReaction}) {
		t.Errorf("the steered message has reactions %v, want %q", m.Reactions, ackReaction)
	}
	if n := len(b.fake.Calls("chat.startStream")); n != 1 || len(b.runs()) != 1 {
		t.Errorf("%d streams, %d runs; want the one answer", n, len(b.runs()))
	}
}

// TestE2ENativeStop: /stop (a mention, then the slash command) ends the
// streamed answer with the partial text and the notice, exactly, still
// streamed.
func TestE2ENativeStop(t *testing.T) {
	b := newE2E(t, botConfig{edit: native})
	for _, stop := range []func(){
		func() { b.say(slacktest.Event{Channel: "C1", Text: mention + " /stop"}) },
		func() {
			if _, err := b.fake.SlashCommand("U1", "C1", "/golem", "stop"); err != nil {
				t.Fatal(err)
			}
		},
	} {
		d := b.say(slacktest.Event{Channel: "C1", Text: mention + " !text 30\n!hang"})
		if !b.fake.Wait(30*time.Second, func() bool {
			return slices.ContainsFunc(b.fake.BotMessages("C1"), func(m slacktest.Message) bool {
				return m.ThreadTS == d.TS && m.Streaming && m.Text == "the quick brown fox jumps over"
			})
		}) {
			t.Fatalf("the partial answer never streamed; bot messages: %+v", b.fake.BotMessages("C1"))
		}
		stop()
		var ans slacktest.Message
		if !b.fake.Wait(30*time.Second, func() bool {
			i := slices.IndexFunc(b.fake.BotMessages("C1"), func(m slacktest.Message) bool {
				return m.ThreadTS == d.TS && m.Text == "the quick brown fox jumps over\n\n⏹️ _Stopped._"
			})
			if i >= 0 {
				ans = b.fake.BotMessages("C1")[i]
			}
			return i >= 0
		}) {
			t.Fatalf("no stopped answer in the thread; bot messages: %+v", b.fake.BotMessages("C1"))
		}
		streamedAnswer(t, b, "C1", d.TS, ans)
	}
}

// TestE2ENativeFilesOut: a file the agent leaves in outbox/ is uploaded in
// the thread the streamed answer is in, after the answer.
func TestE2ENativeFilesOut(t *testing.T) {
	b := newE2E(t, botConfig{edit: native})
	d := b.say(slacktest.Event{Channel: "C1", Text: mention + " !write outbox/report.txt the report\nhere it is"})
	ans := b.answer("C1", d.TS, "echo: here it is")
	streamedAnswer(t, b, "C1", d.TS, ans)
	if !b.fake.Wait(30*time.Second, func() bool { return len(b.fake.Uploads()) == 1 }) {
		t.Fatalf("uploads %+v", b.fake.Uploads())
	}
	if up := b.fake.Uploads()[0]; up.Name != "report.txt" || string(up.Content) != "the report" || up.Channel != "C1" || up.ThreadTS != d.TS {
		t.Errorf("upload %+v, want report.txt in the answer's thread %s", up, d.TS)
	}
}

// TestE2ENativeFinalTextWithTheStop: the last text of a streamed answer
// goes with chat.stopStream (one call, not an append and a stop); a stop
// Slack refuses as not streaming leaves the final text to chat.update,
// still exact.
func TestE2ENativeFinalTextWithTheStop(t *testing.T) {
	b := newE2E(t, botConfig{edit: native})
	d := b.say(slacktest.Event{Channel: "C1", Text: mention + " !delta-rate 10ms 50\ndone"})
	want := strings.Repeat("x", 50) + "echo: done"
	ans := b.answer("C1", d.TS, want)
	streamedAnswer(t, b, "C1", d.TS, ans)
	stops := b.fake.Calls("chat.stopStream")
	if len(stops) != 1 || stops[0].Args["markdown_text"] == "" || !strings.HasSuffix(want, stops[0].Args["markdown_text"]) {
		t.Errorf("chat.stopStream calls %+v, want one carrying the answer's last text", stops)
	}

	b.fake.Fail("chat.stopStream", 1, slacktest.Failure{Error: "message_not_in_streaming_state"})
	d2 := b.say(slacktest.Event{Channel: "C1", Text: mention + " !delta-rate 10ms 50\nagain"})
	want2 := strings.Repeat("x", 50) + "echo: again"
	var got slacktest.Message
	if !b.fake.Wait(30*time.Second, func() bool {
		i := slices.IndexFunc(b.fake.BotMessages("C1"), func(m slacktest.Message) bool { return m.ThreadTS == d2.TS })
		if i >= 0 {
			got = b.fake.BotMessages("C1")[i]
		}
		return i >= 0 && got.Text == want2 && !got.Streaming
	}) {
		t.Fatalf("after a refused stop the answer is %+v, want %q, stopped", got, want2)
	}
	if got.Edits == 0 {
		t.Error("the final text came by no chat.update after the stop was refused")
	}
	for _, m := range readBack(t, b.fake, "C1", d2.TS) {
		if m.Timestamp == got.TS && m.Text != want2 {
			t.Errorf("read back, the answer is %q, want %q", m.Text, want2)
		}
	}
}
