package telegram

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/telegram/telegramtest"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/bottest"
	"github.com/golem-chat/golem/schedule"
	"github.com/jonboulle/clockwork"
)

// TestE2EScheduleInAPrivateChat sets a schedule in a Telegram chat through
// the real library against the fake Bot API, with the loop on a fake
// clock: its runs (now, and at 09:00) are answered in the chat under their
// header, and the Delete button of /schedules deletes it.
func TestE2EScheduleInAPrivateChat(t *testing.T) {
	fake := telegramtest.New(t, telegramtest.Options{})
	clock := clockwork.NewFakeClockAt(time.Date(2026, 12, 7, 8, 59, 0, 0, time.UTC))
	var book *schedule.Book
	bot := bottest.New(t, bottest.Options{AgentLog: filepath.Join(t.TempDir(), "agent.log"), Allow: []string{"telegram:42"},
		Tune: func(o *core.Options) {
			book = schedule.New(schedule.Options{Store: o.Store, Clock: clock, Logger: o.Logger})
			o.Schedules = book
		}})
	a, err := New(Options{Token: fake.Token(), APIURL: fake.URL, State: bot.Store, Inbox: core.Inbox{Dir: t.TempDir()}, Logger: bot.Log})
	if err != nil {
		t.Fatal(err)
	}
	bot.Start(a)
	book.Bind(bot.Dispatcher)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { book.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	sleeping := func() {
		wctx, stop := context.WithTimeout(context.Background(), 20*time.Second)
		defer stop()
		if err := clock.BlockUntilContext(wctx, 1); err != nil {
			t.Fatal("the loop did not sleep")
		}
	}
	text := func(want string) telegramtest.Message {
		var found telegramtest.Message
		fake.WaitUntil(t, 20*time.Second, "a bot message with "+want, func() bool {
			for _, m := range fake.BotMessages(42) {
				if strings.Contains(m.Text, want) {
					found = m
					return true
				}
			}
			return false
		})
		return found
	}

	fake.PushPrivate(ann, `/every TZ=Europe/Berlin "0 10 * * *" --name morning good morning`)
	set := text("Scheduled")
	id := between(set.Text, "Scheduled ", " ")
	if !strings.Contains(set.Text, "every day at 10:00") || !strings.Contains(set.Text, "Europe/Berlin") || !strings.Contains(set.Text, "Mon 7 Dec 10:00") {
		t.Errorf("the answer to /every: %q", set.Text)
	}
	fake.PushPrivate(ann, "/runnow "+id)
	now := text("echo: good morning")
	if now.Text != "⏰ morning · now\n\necho: good morning" {
		t.Errorf("the run's answer %q", now.Text)
	}
	sleeping()
	clock.Advance(time.Minute) // 09:00 UTC, 10:00 in Berlin
	fake.WaitUntil(t, 20*time.Second, "the 10:00 run's answer", func() bool {
		for _, m := range fake.BotMessages(42) {
			if m.Text == "⏰ morning · 10:00\n\necho: good morning" {
				return true
			}
		}
		return false
	})

	fake.PushPrivate(ann, "/schedules")
	list := text("Schedules")
	fake.PushCallback(42, ann, int(list.ID), "golem:unschedule:"+id)
	fake.WaitUntil(t, 20*time.Second, "the schedule deleted", func() bool {
		_, found, _ := bot.Store.Schedule(id)
		return !found
	})
	text("deleted")
	if n := len(bot.Invocations()); n != 2 {
		t.Errorf("%d agent runs, want 2", n)
	}
}

func between(s, a, b string) string {
	_, after, _ := strings.Cut(s, a)
	in, _, _ := strings.Cut(after, b)
	return in
}
