package slacktest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

// slackErr is the ok:false code of err, or "".
func slackErr(err error) string {
	if se, ok := errors.AsType[slack.SlackErrorResponse](err); ok {
		return se.Err
	}
	return ""
}

func TestStream(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	ctx := context.Background()
	api := client(s, BotToken)
	_, parent, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("the question", false))
	if err != nil {
		t.Fatal(err)
	}
	recipient := []slack.MsgOption{slack.MsgOptionTS(parent),
		slack.MsgOptionRecipientUserID("U1"), slack.MsgOptionRecipientTeamID(TeamID)}

	// What Slack refuses at the start.
	for _, c := range []struct {
		name string
		opts []slack.MsgOption
		want string
	}{
		{"no thread", []slack.MsgOption{slack.MsgOptionRecipientUserID("U1"), slack.MsgOptionRecipientTeamID(TeamID)}, "invalid_arguments"},
		{"no user outside a DM", []slack.MsgOption{slack.MsgOptionTS(parent), slack.MsgOptionRecipientTeamID(TeamID)}, "missing_recipient_user_id"},
		{"no team outside a DM", []slack.MsgOption{slack.MsgOptionTS(parent), slack.MsgOptionRecipientUserID("U1")}, "missing_recipient_team_id"},
		{"past 12,000 characters", append(recipient, slack.MsgOptionMarkdownText(strings.Repeat("x", MaxStreamText+1))), "msg_too_long"},
	} {
		if _, _, err := api.StartStreamContext(ctx, "C1", c.opts...); slackErr(err) != c.want {
			t.Errorf("%s: start = %v, want %s", c.name, err, c.want)
		}
	}
	// In a DM the recipient may be left out.
	if _, _, err := api.StartStreamContext(ctx, "D1", slack.MsgOptionTS("1.000001")); err != nil {
		t.Errorf("start in a DM without recipient: %v", err)
	}

	_, ts, err := api.StartStreamContext(ctx, "C1", append(recipient, slack.MsgOptionMarkdownText("Hel"))...)
	if err != nil || ts == "" {
		t.Fatalf("start = %q, %v", ts, err)
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("lo, ")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts); slackErr(err) != "invalid_arguments" {
		t.Errorf("append without markdown_text = %v, want invalid_arguments", err)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("redrawn", false)); slackErr(err) != "streaming_state_conflict" {
		t.Errorf("chat.update of a streaming message = %v, want streaming_state_conflict", err)
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText(strings.Repeat("x", MaxStreamText-5))); slackErr(err) != "msg_too_long" {
		t.Errorf("append past 12,000 characters in all = %v, want msg_too_long", err)
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionChunks(slack.NewMarkdownTextChunk("world"))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.StopStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("!")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("more")); slackErr(err) != "message_not_in_streaming_state" {
		t.Errorf("append after stop = %v, want message_not_in_streaming_state", err)
	}
	// Stopped, the message is an ordinary one: read back, and updated.
	msgs, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: parent})
	if err != nil || len(msgs) != 2 || msgs[1].Timestamp != ts || msgs[1].Text != "Hello, world!" {
		t.Fatalf("replies = %+v, %v; want the streamed text", msgs, err)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("redrawn", false)); err != nil {
		t.Errorf("chat.update after the stream stopped: %v", err)
	}
	if m, _ := s.Message("C1", ts); m.Recipient != "U1" || m.Streaming || m.Appends != 3 {
		t.Errorf("message = %+v", m)
	}
}

func TestStreamIdleExpires(t *testing.T) {
	s := New(Options{StreamIdle: 50 * time.Millisecond})
	defer s.Close()
	ctx := context.Background()
	api := client(s, BotToken)
	_, ts, err := api.StartStreamContext(ctx, "D1", slack.MsgOptionTS("1.000001"), slack.MsgOptionMarkdownText("a"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond) // idle past StreamIdle: the expiry itself is what is tested
	if _, _, err := api.AppendStreamContext(ctx, "D1", ts, slack.MsgOptionMarkdownText("c")); slackErr(err) != "message_not_in_streaming_state" {
		t.Fatalf("append after the stream idled = %v, want message_not_in_streaming_state", err)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "D1", ts, slack.MsgOptionText("a, then c", false)); err != nil {
		t.Fatalf("chat.update of an expired stream: %v", err)
	}
}

func TestStreamTiers(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	ctx := context.Background()
	api := client(s, BotToken)
	for i := range StreamStartsPerMinute {
		if _, _, err := api.StartStreamContext(ctx, "D1", slack.MsgOptionTS("1.000001")); err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
	}
	_, _, err := api.StartStreamContext(ctx, "D1", slack.MsgOptionTS("1.000001"))
	rl, ok := errors.AsType[*slack.RateLimitedError](err)
	if !ok || rl.RetryAfter < time.Second {
		t.Fatalf("start past Tier 2 = %v, want a 429 with Retry-After", err)
	}
	_, ts, _ := s.lastStream()
	for i := range StreamAppendsPerMinute {
		if _, _, err := api.AppendStreamContext(ctx, "D1", ts, slack.MsgOptionMarkdownText("x")); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if _, _, err := api.AppendStreamContext(ctx, "D1", ts, slack.MsgOptionMarkdownText("x")); !isRateLimited(err) {
		t.Fatalf("append past Tier 4 = %v, want a 429", err)
	}
	if n := s.Count("chat.appendStream", http.StatusTooManyRequests); n != 1 {
		t.Errorf("%d appends answered 429, want 1", n)
	}
}

func isRateLimited(err error) bool {
	_, ok := errors.AsType[*slack.RateLimitedError](err)
	return ok
}

// lastStream is the latest streamed message.
func (s *Server) lastStream() (channel, ts string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.msgs) - 1; i >= 0; i-- {
		if s.msgs[i].Streaming {
			return s.msgs[i].Channel, s.msgs[i].TS, true
		}
	}
	return "", "", false
}
