package slacktest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
)

// TestTaskChunks: task_update chunks are taken as strictly as Slack takes
// them, and make task cards on the streamed message.
func TestTaskChunks(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	ctx := context.Background()
	api := client(s, BotToken)
	_, parent, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("the question", false))
	if err != nil {
		t.Fatal(err)
	}
	start := []slack.MsgOption{slack.MsgOptionTS(parent), slack.MsgOptionRecipientUserID("U1"), slack.MsgOptionRecipientTeamID(TeamID)}
	if _, _, err := api.StartStreamContext(ctx, "C1", append(start, slack.MsgOptionTaskDisplayMode("grid"))...); slackErr(err) != "invalid_arguments" {
		t.Errorf("start with task_display_mode grid = %v, want invalid_arguments", err)
	}
	_, ts, err := api.StartStreamContext(ctx, "C1", append(start, slack.MsgOptionTaskDisplayMode(slack.TaskDisplayModeTimeline))...)
	if err != nil {
		t.Fatal(err)
	}
	task := slack.NewTaskUpdateChunk("toolu_1", "Bash: go test ./...")
	task.Status = slack.TaskCardStatusInProgress
	long := task
	long.Output = strings.Repeat("o", MaxTaskText+1)
	noStatus := slack.NewTaskUpdateChunk("toolu_1", "Bash")
	badStatus := task
	badStatus.Status = "running"
	noID := task
	noID.ID = ""
	for _, c := range []struct {
		name string
		opts []slack.MsgOption
		want string
	}{
		{"a task without a status", []slack.MsgOption{slack.MsgOptionChunks(noStatus)}, "invalid_chunks"},
		{"a task with status running", []slack.MsgOption{slack.MsgOptionChunks(badStatus)}, "invalid_chunks"},
		{"a task without an id", []slack.MsgOption{slack.MsgOptionChunks(noID)}, "invalid_chunks"},
		{"a task output past 256 characters", []slack.MsgOption{slack.MsgOptionChunks(long)}, "invalid_chunks"},
		{"markdown_text and chunks at once", []slack.MsgOption{slack.MsgOptionMarkdownText("x"), slack.MsgOptionChunks(task)}, "invalid_arguments"},
		{"an empty markdown chunk", []slack.MsgOption{slack.MsgOptionChunks(slack.NewMarkdownTextChunk(""))}, "invalid_chunks"},
	} {
		if _, _, err := api.AppendStreamContext(ctx, "C1", ts, c.opts...); slackErr(err) != c.want {
			t.Errorf("%s: append = %v, want %s", c.name, err, c.want)
		}
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionChunks(struct {
		slack.TaskUpdateChunk
		Colour string `json:"colour"`
	}{task, "red"})); slackErr(err) != "invalid_chunks" {
		t.Errorf("a task with an unknown field: append = %v, want invalid_chunks", err)
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionChunks(task)); err != nil {
		t.Fatalf("a task alone: %v", err)
	}
	done := task
	done.Status, done.Output = slack.TaskCardStatusComplete, "ok"
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionChunks(slack.NewMarkdownTextChunk("Tests pass."), done)); err != nil {
		t.Fatal(err)
	}
	m, _ := s.Message("C1", ts)
	if m.TaskDisplay != "timeline" || len(m.Tasks) != 1 || m.Tasks[0] != (Task{ID: "toolu_1", Title: "Bash: go test ./...", Status: "complete", Output: "ok", Updates: 2}) {
		t.Errorf("message: display %q, tasks %+v", m.TaskDisplay, m.Tasks)
	}
	if m.Text != "Tests pass." {
		t.Errorf("text %q, want the markdown chunk's", m.Text)
	}
}

// TestStatusLine: a thread's status shows until cleared, until the bot
// posts in the thread, or until it is older than StatusTimeout.
func TestStatusLine(t *testing.T) {
	s := New(Options{StatusTimeout: 200 * time.Millisecond})
	defer s.Close()
	ctx := context.Background()
	api := client(s, BotToken)
	_, parent, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("the question", false))
	if err != nil {
		t.Fatal(err)
	}
	set := func(text string) error {
		return api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{ChannelID: "C1", ThreadTS: parent, Status: text})
	}
	if err := api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{ChannelID: "C1", ThreadTS: "9.000001", Status: "x"}); slackErr(err) != "invalid_thread_ts" {
		t.Errorf("status of no thread = %v, want invalid_thread_ts", err)
	}
	if err := set("is running `make`"); err != nil {
		t.Fatal(err)
	}
	if got := s.Status("C1", parent); got != "is running `make`" {
		t.Errorf("status %q", got)
	}
	if err := set(""); err != nil || s.Status("C1", parent) != "" {
		t.Errorf("cleared: %v, status %q", err, s.Status("C1", parent))
	}
	_ = set("is thinking")
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("a reply", false), slack.MsgOptionTS(parent)); err != nil {
		t.Fatal(err)
	}
	if got := s.Status("C1", parent); got != "" {
		t.Errorf("after a reply in the thread, status %q, want none", got)
	}
	_ = set("is thinking")
	if !s.Wait(2*time.Second, func() bool { return s.Status("C1", parent) == "" }) {
		t.Error("the status did not lapse after StatusTimeout")
	}
}

// TestSplitView: opening the split view starts a thread in the DM and
// sends assistant_thread_started as Slack does (slack-go reads it); the
// thread takes suggested prompts (one to four, each with a title and a
// message) and a title.
func TestSplitView(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	conn := dial(t, s)
	_, ts, err := s.OpenAssistantThread("U1", "D1", "C7")
	if err != nil {
		t.Fatal(err)
	}
	env := conn.next(t)
	if env["type"] != "events_api" {
		t.Fatalf("envelope %v", env)
	}
	outer, err := slackevents.ParseEvent(json.RawMessage(mustJSON(t, env["payload"])), slackevents.OptionNoVerifyToken())
	if err != nil {
		t.Fatal(err)
	}
	ev, ok := outer.InnerEvent.Data.(*slackevents.AssistantThreadStartedEvent)
	if !ok || ev.AssistantThread.ChannelID != "D1" || ev.AssistantThread.ThreadTimeStamp != ts ||
		ev.AssistantThread.UserID != "U1" || ev.AssistantThread.Context.ChannelID != "C7" || ev.AssistantThread.Context.TeamID != TeamID {
		t.Fatalf("slack-go reads %T %+v", outer.InnerEvent.Data, outer.InnerEvent.Data)
	}
	ctx := context.Background()
	api := client(s, BotToken)
	prompts := func(ps ...slack.AssistantThreadsPrompt) error {
		return api.SetAssistantThreadsSuggestedPromptsContext(ctx, slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: "D1", ThreadTS: ts, Prompts: ps})
	}
	p := slack.AssistantThreadsPrompt{Title: "Tests", Message: "Run the tests"}
	for name, ps := range map[string][]slack.AssistantThreadsPrompt{
		"none": nil, "five": {p, p, p, p, p}, "no message": {{Title: "x"}}, "no title": {{Message: "x"}},
	} {
		if err := prompts(ps...); slackErr(err) != "invalid_arguments" {
			t.Errorf("%s: setSuggestedPrompts = %v, want invalid_arguments", name, err)
		}
	}
	if err := prompts(p, p); err != nil {
		t.Fatal(err)
	}
	if err := api.SetAssistantThreadsTitleContext(ctx, slack.AssistantThreadsSetTitleParameters{ChannelID: "D1", ThreadTS: ts, Title: "Run the tests"}); err != nil {
		t.Fatal(err)
	}
	if err := api.SetAssistantThreadsTitleContext(ctx, slack.AssistantThreadsSetTitleParameters{ChannelID: "D1", ThreadTS: "1.000001", Title: "x"}); slackErr(err) != "invalid_thread_ts" {
		t.Errorf("title of a thread that is not the split view's = %v, want invalid_thread_ts", err)
	}
	th, _ := s.Assistant("D1", ts)
	if th.Title != "Run the tests" || len(th.Prompts) != 2 || th.Prompts[0] != (Prompt{"Tests", "Run the tests"}) || th.Viewing != "C7" {
		t.Errorf("thread %+v", th)
	}
	if _, err := s.ChangeAssistantContext("U1", "D1", ts, "C8"); err != nil {
		t.Fatal(err)
	}
	if th, _ := s.Assistant("D1", ts); th.Viewing != "C8" {
		t.Errorf("after the context changed, viewing %q", th.Viewing)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
