package slacktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"slices"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

func client(s *Server, token string) *slack.Client {
	return slack.New(token, slack.OptionAPIURL(s.APIURL()), slack.OptionAppLevelToken(AppToken))
}

func TestWebAPI(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	ctx := context.Background()
	api := client(s, BotToken)

	auth, err := api.AuthTestContext(ctx)
	if err != nil || auth.UserID != BotUserID || auth.TeamID != TeamID || auth.BotID != BotID {
		t.Fatalf("auth.test = %+v, %v", auth, err)
	}
	if _, err := client(s, "xoxb-wrong").AuthTestContext(ctx); err == nil || err.Error() != "invalid_auth" {
		t.Fatalf("auth.test with a wrong token: %v, want invalid_auth", err)
	}

	ch, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("hello", false))
	if err != nil || ch != "C1" || ts == "" {
		t.Fatalf("post = %q %q %v", ch, ts, err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("in thread", false), slack.MsgOptionTS(ts)); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("hello, world", false)); err != nil {
		t.Fatal(err)
	}
	if err := api.AddReactionContext(ctx, "hourglass", slack.NewRefToMessage("C1", ts)); err != nil {
		t.Fatal(err)
	}
	msgs, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: ts})
	if err != nil || len(msgs) != 2 || msgs[0].Text != "hello, world" || msgs[1].ThreadTimestamp != ts {
		t.Fatalf("replies = %+v, %v", msgs, err)
	}
	m, _ := s.Message("C1", ts)
	if m.Edits != 1 || len(m.Reactions) != 1 || m.Reactions[0] != "hourglass" {
		t.Fatalf("message = %+v", m)
	}
	if err := api.RemoveReactionContext(ctx, "hourglass", slack.NewRefToMessage("C1", ts)); err != nil {
		t.Fatal(err)
	}
	posts := s.Calls("chat.postMessage")
	if len(posts) != 2 || posts[1].Args["thread_ts"] != ts || posts[1].Args["text"] != "in thread" {
		t.Fatalf("recorded posts = %+v", posts)
	}
	if _, ok := posts[0].Args["token"]; ok {
		t.Fatal("the token is recorded among the args")
	}
}

func TestFaults(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	ctx := context.Background()
	api := client(s, BotToken)
	s.Fail("chat.postMessage", 1, Failure{Status: 429, RetryAfter: 7})
	s.Fail("chat.postMessage", 1, Failure{Status: 503})
	s.Fail("chat.postMessage", 1, Failure{Error: "channel_not_found"})

	_, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false))
	if rl, ok := errors.AsType[*slack.RateLimitedError](err); !ok || rl.RetryAfter != 7*time.Second {
		t.Fatalf("first post: %v, want a 7s rate limit", err)
	}
	_, _, err = api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false))
	if sc, ok := errors.AsType[slack.StatusCodeError](err); !ok || sc.Code != 503 {
		t.Fatalf("second post: %v, want 503", err)
	}
	_, _, err = api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false))
	if err == nil || err.Error() != "channel_not_found" {
		t.Fatalf("third post: %v", err)
	}
	if _, _, err = api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false)); err != nil {
		t.Fatalf("fourth post: %v", err)
	}
	if got := s.Count("chat.postMessage", 429); got != 1 {
		t.Fatalf("429s recorded = %d", got)
	}
}

func TestUpdateBudget(t *testing.T) {
	s := New(Options{UpdatesPerMinute: 3})
	defer s.Close()
	ctx := context.Background()
	api := client(s, BotToken)
	_, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("y", false)); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
	_, _, _, err = api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("z", false))
	rl, ok := errors.AsType[*slack.RateLimitedError](err)
	if !ok || rl.RetryAfter < time.Second || rl.RetryAfter > time.Minute {
		t.Fatalf("4th update in a minute: %v, want 429 with Retry-After", err)
	}
	if m, _ := s.Message("C1", ts); m.Text != "y" || m.Edits != 3 {
		t.Fatalf("message = %+v", m)
	}
}

func TestFiles(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	f := s.AddFile("notes.txt", "text/plain", []byte("hello file"))
	var buf bytes.Buffer
	if err := client(s, BotToken).GetFileContext(context.Background(), f["url_private_download"].(string), &buf); err != nil || buf.String() != "hello file" {
		t.Fatalf("download = %q, %v", buf.String(), err)
	}
	if err := client(s, "xoxb-other").GetFileContext(context.Background(), f["url_private"].(string), io.Discard); err == nil {
		t.Fatal("download with a wrong token succeeded")
	}
	info, _, _, err := client(s, BotToken).GetFileInfoContext(context.Background(), f["id"].(string), 0, 0)
	if err != nil || info.Name != "notes.txt" || info.Size != 10 {
		t.Fatalf("files.info = %+v, %v", info, err)
	}
	if s.Downloads(f["id"].(string)) != 1 {
		t.Fatal("download not counted")
	}
}

func TestSocketMode(t *testing.T) {
	s := New(Options{PingInterval: 50 * time.Millisecond})
	defer s.Close()
	sm := socketmode.New(client(s, BotToken), socketmode.OptionLog(log.New(io.Discard, "", 0)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runDone := make(chan error, 1)
	go func() { runDone <- sm.RunContext(ctx) }()

	got := make(chan socketmode.Event, 100)
	go func() {
		for e := range sm.Events {
			if e.Request != nil && e.Request.EnvelopeID != "" {
				_ = sm.Ack(*e.Request)
			}
			got <- e
		}
	}()
	next := func(want socketmode.EventType) socketmode.Event {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case e := <-got:
				if e.Type == want {
					return e
				}
			case <-timeout:
				t.Fatalf("no %s event", want)
			}
		}
	}
	next(socketmode.EventTypeHello)

	d, err := s.Deliver(Event{User: "U1", Channel: "C1", Text: "<@" + BotUserID + "> hi"})
	if err != nil {
		t.Fatal(err)
	}
	e := next(socketmode.EventTypeEventsAPI)
	ev := e.Data.(slackevents.EventsAPIEvent)
	mention, ok := ev.InnerEvent.Data.(*slackevents.AppMentionEvent)
	if !ok || mention.User != "U1" || mention.TimeStamp != d.TS {
		t.Fatalf("inner event = %#v", ev.InnerEvent.Data)
	}
	if cb := ev.Data.(*slackevents.EventsAPICallbackEvent); cb.EventID != d.EventID {
		t.Fatalf("event_id = %q, want %q", cb.EventID, d.EventID)
	}
	if !s.Wait(5*time.Second, func() bool { _, ok := s.Acked(d.EnvelopeID); return ok }) {
		t.Fatal("ack not recorded")
	}
	r, _ := s.Redeliver(d)
	if e := next(socketmode.EventTypeEventsAPI); e.Request.RetryAttempt != 1 || r.EventID != d.EventID {
		t.Fatalf("redelivery attempt = %d", e.Request.RetryAttempt)
	}

	if _, err := s.SlashCommand("U1", "C1", "/golem", "stop"); err != nil {
		t.Fatal(err)
	}
	if cmd := next(socketmode.EventTypeSlashCommand).Data.(slack.SlashCommand); cmd.Command != "/golem" || cmd.Text != "stop" {
		t.Fatalf("slash command = %+v", cmd)
	}

	s.RequestDisconnect()
	if !s.Wait(10*time.Second, func() bool { return s.Connects() == 2 && s.Open() == 1 }) {
		t.Fatalf("no reconnect after a disconnect request: %d connects", s.Connects())
	}
	s.DropSockets()
	if !s.Wait(10*time.Second, func() bool { return s.Connects() == 3 && s.Open() == 1 }) {
		t.Fatalf("no reconnect after a dropped socket: %d connects", s.Connects())
	}
	cancel()
	<-runDone
}

func TestHistoryPagesLikeSlack(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	ctx := context.Background()
	api := client(s, BotToken)
	var top []string
	for i := range 5 {
		top = append(top, s.AddMessage(Message{Channel: "C1", User: "U1", Text: fmt.Sprint("top ", i)}).TS)
	}
	parent := top[1]
	var replies []string
	for i := range 4 {
		replies = append(replies, s.AddMessage(Message{Channel: "C1", ThreadTS: parent, User: "U2", Text: fmt.Sprint("reply ", i)}).TS)
	}

	// conversations.history: newest first, latest exclusive, two a page.
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("history pages never end")
		}
		res, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
			ChannelID: "C1", Latest: top[4], Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Messages {
			got = append(got, m.Timestamp)
			if m.Timestamp == parent && (m.ThreadTimestamp != parent || m.ReplyCount != 4) {
				t.Errorf("a thread's parent in history = %+v, want thread_ts and reply_count", m)
			}
		}
		if !res.HasMore {
			if res.ResponseMetaData.NextCursor != "" {
				t.Error("a next_cursor on the last page")
			}
			break
		}
		cursor = res.ResponseMetaData.NextCursor
	}
	if want := []string{top[3], top[2], top[1], top[0]}; !slices.Equal(got, want) {
		t.Errorf("history = %v, want %v (newest first, latest excluded, no replies)", got, want)
	}

	// conversations.replies: the parent, then the replies oldest first.
	got = nil
	cursor = ""
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("replies pages never end")
		}
		msgs, more, next, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
			ChannelID: "C1", Timestamp: parent, Latest: replies[3], Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			got = append(got, m.Timestamp)
		}
		if !more {
			break
		}
		cursor = next
	}
	if want := []string{parent, replies[0], replies[1], replies[2]}; !slices.Equal(got, want) {
		t.Errorf("replies = %v, want %v", got, want)
	}

	for _, c := range []struct {
		name string
		call func() error
		want string
	}{
		{"a limit over 999", func() error {
			_, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1", Limit: 1000})
			return err
		}, "invalid_limit"},
		{"a made-up cursor", func() error {
			_, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1", Cursor: "bm9wZQ=="})
			return err
		}, "invalid_cursor"},
		{"a bad latest", func() error {
			_, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: parent, Latest: "yesterday"})
			return err
		}, "invalid_ts_latest"},
		{"a thread that is not there", func() error {
			_, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: "1.000001"})
			return err
		}, "thread_not_found"},
	} {
		if err := c.call(); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %s", c.name, err, c.want)
		}
	}
}

func TestScopesMembershipAndUsers(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	ctx := context.Background()
	api := client(s, BotToken)
	s.AddUser(User{ID: "U1", Name: "ann", RealName: "Ann Smith", DisplayName: "annie"})
	u, err := api.GetUserInfoContext(ctx, "U1")
	if err != nil || u.Profile.DisplayName != "annie" || u.Profile.RealName != "Ann Smith" || u.Name != "ann" {
		t.Fatalf("users.info = %+v, %v", u, err)
	}
	if _, err := api.GetUserInfoContext(ctx, "U404"); err == nil || err.Error() != "user_not_found" {
		t.Errorf("users.info of a stranger: %v", err)
	}

	s.SetScopes("chat:write")
	_, err = api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "G1"})
	if err == nil || err.Error() != "missing_scope" {
		t.Errorf("history without groups:history: %v, want missing_scope", err)
	}
	if c := s.Calls("conversations.history"); len(c) != 1 || c[0].Error != "missing_scope" {
		t.Errorf("recorded = %+v", c)
	}
	if _, err := api.GetUserInfoContext(ctx, "U1"); err == nil || err.Error() != "missing_scope" {
		t.Errorf("users.info without users:read: %v", err)
	}
	s.SetScopes(DefaultScopes...)

	s.Leave("C9")
	if _, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C9"}); err == nil || err.Error() != "not_in_channel" {
		t.Errorf("history where the bot is not: %v", err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C9", slack.MsgOptionText("x", false)); err == nil || err.Error() != "not_in_channel" {
		t.Errorf("post where the bot is not: %v", err)
	}
}

func TestHold(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	api := client(s, BotToken)
	release := make(chan struct{})
	s.Fail("auth.test", 1, Failure{Until: release})
	done := make(chan error, 1)
	go func() { _, err := api.AuthTestContext(context.Background()); done <- err }()
	if !s.Wait(5*time.Second, func() bool { return s.Holding("auth.test") == 1 }) {
		t.Fatal("the call is not held")
	}
	select {
	case err := <-done:
		t.Fatalf("a held call was answered: %v", err)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the released call: %v", err)
	}
	if s.Holding("auth.test") != 0 || s.Count("auth.test", 200) != 1 {
		t.Errorf("holding %d, answered %d", s.Holding("auth.test"), s.Count("auth.test", 200))
	}

	ctx, cancel := context.WithCancel(context.Background())
	s.Fail("auth.test", 1, Failure{Until: make(chan struct{})})
	go func() { _, err := api.AuthTestContext(ctx); done <- err }()
	s.Wait(5*time.Second, func() bool { return s.Holding("auth.test") == 1 })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a held call given up on succeeded")
	}
	if !s.Wait(5*time.Second, func() bool { return s.Holding("auth.test") == 0 && s.Count("auth.test", 0) == 2 }) {
		t.Errorf("the call given up on is not recorded: %+v", s.Calls("auth.test"))
	}
}
