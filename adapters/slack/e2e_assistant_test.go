package slack

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/slack/slacktest"
)

func tasks(o *Options) { o.Streaming, o.ToolActivity = StreamNative, ActivityTasks }

// TestE2ENativeToolCallsAreTaskCards: with tool_activity tasks, each tool
// call is a task card in the streamed answer (task_display_mode timeline),
// its id the tool call's, in_progress at the call and complete or error
// with its output shortened at the result; no activity reply is posted,
// and the answer's text is still exactly the answer.
func TestE2ENativeToolCallsAreTaskCards(t *testing.T) {
	b := newE2E(t, botConfig{edit: tasks})
	d := b.say(slacktest.Event{Channel: "C1", Text: mention + " !sh echo hello\n!sh echo oops; exit 3\n!sh seq 1 400\nsummed up"})
	ans := b.answer("C1", d.TS, "echo: summed up")
	if !b.fake.Wait(10*time.Second, func() bool { m, _ := b.fake.Message("C1", ans.TS); return !m.Streaming }) {
		t.Fatal("the stream was never stopped")
	}
	ans, _ = b.fake.Message("C1", ans.TS)
	if n := len(b.fake.BotMessages("C1")); n != 1 {
		t.Errorf("%d bot messages, want the answer alone (no activity replies)", n)
	}
	starts := b.fake.Calls("chat.startStream")
	if len(starts) != 1 || starts[0].Args["task_display_mode"] != "timeline" {
		t.Fatalf("chat.startStream calls %+v, want one with task_display_mode timeline", starts)
	}
	for _, c := range b.fake.Calls("chat.appendStream") {
		if c.Error != "" {
			t.Errorf("an append was refused: %s (%v)", c.Error, c.Args)
		}
	}
	if len(ans.Tasks) != 3 {
		t.Fatalf("task cards %+v, want 3", ans.Tasks)
	}
	id := regexp.MustCompile(`^toolu_\d+$`)
	want := []struct{ title, status, output string }{
		{"Bash: echo hello", "complete", "hello"},
		{"Bash: echo oops; exit 3", "error", "oops"},
		{"Bash: seq 1 400", "complete", ""},
	}
	for i, w := range want {
		task := ans.Tasks[i]
		if !id.MatchString(task.ID) || task.Title != w.title || task.Status != w.status || task.Updates != 2 {
			t.Errorf("task %d = %+v, want id toolu_N, title %q, status %q after 2 updates", i, task, w.title, w.status)
		}
		if w.output != "" && task.Output != w.output {
			t.Errorf("task %d output %q, want %q", i, task.Output, w.output)
		}
	}
	if out := ans.Tasks[2].Output; len([]rune(out)) > slacktest.MaxTaskText || !strings.HasSuffix(out, "399\n400") || !strings.HasPrefix(out, "…") {
		t.Errorf("a long output is %d characters: %.40q…; want its end within %d, marked cut", len([]rune(out)), out, slacktest.MaxTaskText)
	}
	// Each card went in_progress first, then to its end.
	first := map[string]string{}
	for _, c := range b.fake.Calls("chat.appendStream") {
		for _, id := range []string{ans.Tasks[0].ID, ans.Tasks[1].ID, ans.Tasks[2].ID} {
			if _, seen := first[id]; !seen && strings.Contains(c.Args["chunks"], `"id":"`+id+`"`) {
				first[id] = c.Args["chunks"]
			}
		}
	}
	for id, chunks := range first {
		if !strings.Contains(chunks, `"status":"in_progress"`) {
			t.Errorf("task %s first came as %s, want in_progress", id, chunks)
		}
	}
	for _, m := range readBack(t, b.fake, "C1", d.TS) {
		if m.Timestamp == ans.TS && m.Text != "echo: summed up" {
			t.Errorf("read back, the answer is %q", m.Text)
		}
	}
}

// TestE2ENativeStatusWhileAToolRuns: while a long tool call runs and
// nothing streams, the thread's status says what the agent is doing, set
// again before Slack would clear it (here the fake clears a status after
// 500 ms and golem refreshes every 150 ms), and golem clears it (status
// "") when the answer ends. With tool_activity replies the activity reply
// (which clears a status on Slack) is followed by the status again.
func TestE2ENativeStatusWhileAToolRuns(t *testing.T) {
	fake := slacktest.New(slacktest.Options{PingInterval: time.Second, StatusTimeout: 500 * time.Millisecond})
	t.Cleanup(fake.Close)
	b := startBot(t, fake, filepath.Join(t.TempDir(), "agent.log"), botConfig{edit: func(o *Options) {
		native(o)
		o.StatusRefresh = 150 * time.Millisecond
	}})
	d := b.say(slacktest.Event{Channel: "C1", Text: mention + " !sh sleep 2; echo built\nbuilt it"})
	const want = "is running `sleep 2; echo built`"
	sets := func() int {
		n := 0
		for _, c := range fake.Calls("assistant.threads.setStatus") {
			if c.Args["status"] == want && c.Args["thread_ts"] == d.TS && c.Args["channel_id"] == "C1" && c.Status == 200 && c.Error == "" {
				n++
			}
		}
		return n
	}
	if !fake.Wait(10*time.Second, func() bool { return fake.Status("C1", d.TS) == want }) {
		t.Fatalf("no status %q; setStatus calls %+v", want, fake.Calls("assistant.threads.setStatus"))
	}
	// Past the fake's 500 ms clear, the status is still there.
	if !fake.Wait(10*time.Second, func() bool { return sets() >= 6 }) {
		t.Fatalf("the status was set %d times during a 2 s tool call, want it refreshed", sets())
	}
	first := fake.Calls("assistant.threads.setStatus")[0].At
	if got := fake.Status("C1", d.TS); got != want || time.Since(first) < 500*time.Millisecond {
		t.Errorf("%v after the first set, the status is %q, want %q kept up", time.Since(first), got, want)
	}
	b.answer("C1", d.TS, "echo: built it")
	if !fake.Wait(10*time.Second, func() bool {
		calls := fake.Calls("assistant.threads.setStatus")
		return len(calls) > 0 && calls[len(calls)-1].Args["status"] == ""
	}) {
		t.Fatal("golem did not clear the status when the answer ended")
	}
	if got := fake.Status("C1", d.TS); got != "" {
		t.Errorf("after the answer, the status is %q", got)
	}
	if fake.Count("assistant.threads.setStatus", 429) != 0 {
		t.Error("setStatus got 429s")
	}
}

// TestE2ESplitView: opening the app's split view gets the configured
// suggested prompts; a message in its thread (a DM, no mention) is
// answered as a streamed reply in that thread, the thread's title becomes
// the first prompt, and the channel the person has open (the latest
// context) is in the agent's prompt.
func TestE2ESplitView(t *testing.T) {
	prompts := []Prompt{{Title: "Run the tests", Message: "Run the tests and tell me what fails"}, {Title: "Explain", Message: "Explain this repository"}}
	b := newE2E(t, botConfig{edit: func(o *Options) { native(o); o.SuggestedPrompts = prompts }})
	b.fake.AddChannel("C8", "ops")
	_, thread, err := b.fake.OpenAssistantThread("U1", "D1", "C7")
	if err != nil {
		t.Fatal(err)
	}
	if !b.fake.Wait(10*time.Second, func() bool { th, _ := b.fake.Assistant("D1", thread); return len(th.Prompts) == 2 }) {
		t.Fatalf("no suggested prompts; calls %+v", b.fake.Calls("assistant.threads.setSuggestedPrompts"))
	}
	th, _ := b.fake.Assistant("D1", thread)
	if th.Prompts[0].Title != prompts[0].Title || th.Prompts[1].Message != prompts[1].Message {
		t.Errorf("prompts %+v, want %+v", th.Prompts, prompts)
	}
	if _, err := b.fake.ChangeAssistantContext("U1", "D1", thread, "C8"); err != nil {
		t.Fatal(err)
	}
	d := b.say(slacktest.Event{Type: "message", ChannelType: "im", Channel: "D1", ThreadTS: thread, Text: "why did the deploy fail?"})
	ans := b.answered("D1", d.TS, "why did the deploy fail?")
	if ans.ThreadTS != thread {
		t.Errorf("the answer is in thread %q, want the split view's %q", ans.ThreadTS, thread)
	}
	if starts := b.fake.Calls("chat.startStream"); len(starts) != 1 || starts[0].Args["thread_ts"] != thread {
		t.Errorf("chat.startStream calls %+v, want one in the thread", starts)
	}
	if p := b.prompt(0); !strings.Contains(p, "C8") || strings.Contains(p, "C7") || !strings.HasSuffix(p, "why did the deploy fail?") {
		t.Errorf("the agent was asked %q; want the channel open now (C8) named, then the question", p)
	}
	if !b.fake.Wait(10*time.Second, func() bool { th, _ := b.fake.Assistant("D1", thread); return th.Title != "" }) {
		t.Fatal("the thread's title was not set")
	}
	if th, _ := b.fake.Assistant("D1", thread); th.Title != "why did the deploy fail?" {
		t.Errorf("title %q, want the first prompt", th.Title)
	}
	d2 := b.say(slacktest.Event{Type: "message", ChannelType: "im", Channel: "D1", ThreadTS: thread, Text: "and now?"})
	b.answered("D1", d2.TS, "and now?")
	if n := len(b.fake.Calls("assistant.threads.setTitle")); n != 1 {
		t.Errorf("%d setTitle calls, want the first prompt's only", n)
	}
}
