package slack

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/golem-chat/golem/adapters/slack/slacktest"
)

func native(o *Options) { o.Streaming = StreamNative }

// readBack reads the thread at parent in channel through slack-go, as any
// client would, and returns the bot's replies in it.
func readBack(t *testing.T, fake *slacktest.Server, channel, parent string) []slackapi.Message {
	t.Helper()
	api := slackapi.New(slacktest.BotToken, slackapi.OptionAPIURL(fake.APIURL()))
	msgs, _, _, err := api.GetConversationRepliesContext(context.Background(),
		&slackapi.GetConversationRepliesParameters{ChannelID: channel, Timestamp: parent, Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	var mine []slackapi.Message
	for _, m := range msgs {
		if m.BotID == slacktest.BotID && m.Timestamp != parent {
			mine = append(mine, m)
		}
	}
	return mine
}

// TestE2ENativeStreamsTheAnswerInTheThread: with streaming native, a
// mention whose turn starts with a tool call is answered by a streamed
// reply in the mention's thread, opened empty (no placeholder to take
// back), grown by appends of the new text only, never by chat.update, and
// stopped at the end; its final text, read back with
// conversations.replies, is exactly the answer.
func TestE2ENativeStreamsTheAnswerInTheThread(t *testing.T) {
	b := newE2E(t, botConfig{edit: native})
	d := b.say(slacktest.Event{Channel: "C1",
		Text: mention + " !tool Bash {\"command\":\"go test ./...\"}\n!sleep 1s\n!delta-rate 10ms 250\ndone"})
	want := strings.Repeat("x", 250) + "echo: done"
	ans := b.answer("C1", d.TS, want)
	if !b.fake.Wait(10*time.Second, func() bool { m, _ := b.fake.Message("C1", ans.TS); return !m.Streaming }) {
		t.Fatal("the stream was never stopped")
	}
	if ans.ThreadTS != d.TS {
		t.Errorf("the answer is in thread %q, want the mention's %q", ans.ThreadTS, d.TS)
	}
	if ans.Edits != 0 || b.fake.Count("chat.update", 200) != 0 {
		t.Errorf("the answer was redrawn with chat.update (%d edits)", ans.Edits)
	}
	starts := b.fake.Calls("chat.startStream")
	if len(starts) != 1 || starts[0].Args["recipient_user_id"] != "U1" || starts[0].Args["recipient_team_id"] != slacktest.TeamID ||
		starts[0].Args["thread_ts"] != d.TS {
		t.Fatalf("chat.startStream calls = %+v", starts)
	}
	if md, ok := starts[0].Args["markdown_text"]; ok {
		t.Errorf("the stream was opened with %q, want it opened empty (the placeholder cannot be taken back)", md)
	}
	appends := b.fake.Calls("chat.appendStream")
	var sent strings.Builder
	for _, c := range append(appends, b.fake.Calls("chat.stopStream")...) {
		sent.WriteString(c.Args["markdown_text"])
	}
	if sent.String() != want {
		t.Errorf("the appends and the stop add up to %q, want %q (each only the new text)", sent.String(), want)
	}
	t.Logf("%d appends, %d stops for a 250-delta answer", len(appends), len(b.fake.Calls("chat.stopStream")))
	if len(appends) < 2 || len(appends) > 40 {
		t.Errorf("%d appends for 250 deltas over ~2.5 s, want a few (coalesced)", len(appends))
	}
	back := readBack(t, b.fake, "C1", d.TS)
	var texts []string
	for _, m := range back {
		texts = append(texts, m.Text)
	}
	if !strings.Contains(strings.Join(texts, "\n"), "go test ./...") {
		t.Errorf("no tool activity in the thread: %q", texts)
	}
	found := false
	for _, m := range back {
		found = found || (m.Timestamp == ans.TS && m.Text == want)
	}
	if !found {
		t.Errorf("read back, the thread holds %q; want the answer %q", texts, want)
	}
}

// TestE2ENativeStreamRefusedFallsBackToEdits: a stream Slack will not
// start (here channel_type_not_supported) leaves that answer to today's
// post and chat.update, with the exact final text.
func TestE2ENativeStreamRefusedFallsBackToEdits(t *testing.T) {
	b := newE2E(t, botConfig{edit: native})
	b.fake.Fail("chat.startStream", 1, slacktest.Failure{Error: "channel_type_not_supported"})
	d := b.say(slacktest.Event{Channel: "C1", Text: mention + " !delta-rate 10ms 150\ndone"})
	want := strings.Repeat("x", 150) + "echo: done"
	ans := b.answer("C1", d.TS, want)
	if ans.Edits == 0 || ans.ThreadTS != "" {
		t.Errorf("fallback answer: %d edits, thread %q; want it posted at the top and edited", ans.Edits, ans.ThreadTS)
	}
	if n := len(b.fake.Calls("chat.startStream")); n != 1 {
		t.Errorf("%d chat.startStream calls, want the one refused", n)
	}
	// The next answer streams again.
	d2 := b.say(slacktest.Event{Channel: "C1", Text: mention + " again"})
	ans2 := b.answer("C1", d2.TS, "echo: again")
	if ans2.ThreadTS != d2.TS || ans2.Edits != 0 {
		t.Errorf("the next answer: thread %q, %d edits; want it streamed", ans2.ThreadTS, ans2.Edits)
	}
}

// TestE2ENativeStreamExpiresDuringAToolCall: a stream left idle past
// Slack's limit during a long tool call (its status shown meanwhile) is
// ended by Slack; the rest of the answer goes in by chat.update on the
// same message, and the final text is still exact. With task cards, the
// card of that call stays in the message; the call's result finds the
// stream ended.
func TestE2ENativeStreamExpiresDuringAToolCall(t *testing.T) {
	for name, mode := range map[string]func(*Options){"replies": native, "tasks": tasks} {
		t.Run(name, func(t *testing.T) {
			fake := slacktest.New(slacktest.Options{PingInterval: time.Second, StreamIdle: 300 * time.Millisecond})
			t.Cleanup(fake.Close)
			b := startBot(t, fake, filepath.Join(t.TempDir(), "agent.log"), botConfig{edit: mode})
			d := b.say(slacktest.Event{Channel: "C1", Text: mention + " !delta-rate 5ms 40\n!sleep 1s\n!sh sleep 1\nafter"})
			want := strings.Repeat("x", 40) + "\n\necho: after"
			ans := b.answer("C1", d.TS, want)
			if ans.ThreadTS != d.TS {
				t.Errorf("the answer is in thread %q, want the mention's %q", ans.ThreadTS, d.TS)
			}
			if ans.Edits == 0 {
				t.Error("the answer was never updated after its stream expired")
			}
			expired := 0
			for _, c := range append(b.fake.Calls("chat.appendStream"), b.fake.Calls("chat.stopStream")...) {
				if c.Error == "message_not_in_streaming_state" {
					expired++
				}
			}
			if expired != 1 {
				t.Errorf("%d appends or stops refused as not streaming, want the one that found the stream expired", expired)
			}
			if n := len(b.fake.Calls("chat.startStream")); n != 1 {
				t.Errorf("%d streams started, want the answer kept in its one message", n)
			}
			if !slices.ContainsFunc(b.fake.Calls("assistant.threads.setStatus"), func(c slacktest.Call) bool {
				return c.Args["status"] == "is running `sleep 1`"
			}) {
				t.Error("no status while the tool ran")
			}
			for _, m := range readBack(t, b.fake, "C1", d.TS) {
				if m.Timestamp == ans.TS && m.Text != want {
					t.Errorf("read back, the answer is %q, want %q", m.Text, want)
				}
			}
		})
	}
}

// TestE2ENativeLongAnswerContinuesInANewStream: past 12,000 characters
// the answer continues in a new streamed message in the same thread, no
// message over the limit, none leaving a code fence open.
func TestE2ENativeLongAnswerContinuesInANewStream(t *testing.T) {
	b := newE2E(t, botConfig{edit: native})
	d := b.say(slacktest.Event{Channel: "C1", Text: mention + " !fence\n!fence\n!fence"})
	if !b.fake.Wait(60*time.Second, func() bool {
		m, _ := b.fake.Message("C1", d.TS)
		for _, m := range b.fake.BotMessages("C1") {
			if m.Streaming {
				return false
			}
		}
		return len(m.Reactions) == 0 && len(b.runs()) == 1 && strings.Count(joinTexts(b.fake.BotMessages("C1")), "a test for it as well.") == 3
	}) {
		t.Fatalf("the long answer did not finish: %d bot messages", len(b.fake.BotMessages("C1")))
	}
	msgs := b.fake.BotMessages("C1")
	if len(msgs) < 2 {
		t.Fatalf("%d answer messages, want the answer continued in a second one", len(msgs))
	}
	for i, m := range msgs {
		if m.ThreadTS != d.TS {
			t.Errorf("message %d is in thread %q, want the mention's", i, m.ThreadTS)
		}
		if m.Streaming {
			t.Errorf("message %d is still streaming", i)
		}
		if n := len([]rune(m.Text)); n > slacktest.MaxStreamText {
			t.Errorf("message %d has %d characters", i, n)
		}
		if strings.Count(m.Text, "```")%2 != 0 {
			t.Errorf("message %d leaves a code fence open", i)
		}
	}
	if n := len(b.fake.Calls("chat.startStream")); n != len(msgs) || b.fake.Count("chat.update", 200) != 0 {
		t.Errorf("%d streams for %d messages, %d updates; want each message streamed", n, len(msgs), b.fake.Count("chat.update", 200))
	}
}

// TestE2ENativeDMAndApproval: in a DM the streamed answer is a reply in
// the thread of the message that asked; a permission request is its own
// message with buttons in that thread, and once allowed the answer ends
// streamed with its exact text.
func TestE2ENativeDMAndApproval(t *testing.T) {
	b := newE2E(t, botConfig{edit: native})
	d := b.say(slacktest.Event{Type: "message", ChannelType: "im", Channel: "D1", Text: "!ask Bash {\"command\":\"ls\"}\nran it"})
	var q slacktest.Message
	if !b.fake.Wait(20*time.Second, func() bool {
		for _, m := range b.fake.BotMessages("D1") {
			if strings.Contains(m.Blocks, `"actions"`) {
				q = m
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no question with buttons; bot messages: %+v", b.fake.BotMessages("D1"))
	}
	if q.ThreadTS != d.TS {
		t.Errorf("the question is in thread %q, want the asking message's %q", q.ThreadTS, d.TS)
	}
	i := strings.Index(q.Blocks, "golem:allow:")
	if _, err := b.fake.Click("U1", "D1", q.ThreadTS, q.TS, q.Blocks[i:i+len("golem:allow:")+8]); err != nil {
		t.Fatal(err)
	}
	ans := b.answer("D1", d.TS, "echo: ran it")
	if ans.ThreadTS != d.TS || ans.Edits != 0 {
		t.Errorf("the DM answer: thread %q, %d edits; want a streamed reply in %q", ans.ThreadTS, ans.Edits, d.TS)
	}
	if starts := b.fake.Calls("chat.startStream"); len(starts) != 1 || starts[0].Args["thread_ts"] != d.TS {
		t.Errorf("chat.startStream calls = %+v", starts)
	}
}

// TestE2ENativeStartsBeyondTier2AreEdits: more answers at once than the
// workspace's chat.startStream budget lets start now are posted and edited
// at once rather than waiting for a start; no call gets a 429.
func TestE2ENativeStartsBeyondTier2AreEdits(t *testing.T) {
	b := newE2E(t, botConfig{edit: native})
	const n = 12
	var asked []slacktest.Delivery
	for i := range n {
		asked = append(asked, b.say(slacktest.Event{Channel: "C" + string(rune('A'+i)), Text: mention + " hi"}))
	}
	streamed, edited := 0, 0
	for i, d := range asked {
		ans := b.answer("C"+string(rune('A'+i)), d.TS, "echo: hi")
		if ans.ThreadTS == d.TS {
			streamed++
		} else {
			edited++
		}
	}
	t.Logf("%d answers streamed, %d posted and edited", streamed, edited)
	if streamed == 0 || edited == 0 || streamed > 9 {
		t.Errorf("%d streamed, %d edited; want at most the budget's burst (9) streamed and the rest edited", streamed, edited)
	}
	if n := b.fake.RateLimited(); n != 0 {
		t.Errorf("%d calls answered 429", n)
	}
}
