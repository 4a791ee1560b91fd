package discord

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/discord/discordtest"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/schedule"
	"github.com/jonboulle/clockwork"
)

// TestScheduleFromSlashCommands sets a schedule with Discord's /every (its
// options carry the cron expression without quotes) through discordgo
// against the fake Discord, runs it now and at its time on a fake clock:
// each answer a message in the channel under its header.
func TestScheduleFromSlashCommands(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 12, 7, 8, 59, 0, 0, time.UTC))
	var book *schedule.Book
	w := newWorldWith(t, discordtest.Options{}, Options{}, func(o *core.Options) {
		book = schedule.New(schedule.Options{Store: o.Store, Clock: clock, Logger: o.Logger})
		o.Schedules = book
	})
	book.Bind(w.golem.Dispatcher)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { book.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	id := w.fake.Command(discordtest.Slash{Channel: "c1", Guild: "g1", User: "u1", Name: "every",
		Options: []discordtest.Option{{Name: "schedule", Value: "0 9 * * 1-5"}, {Name: "prompt", Value: "--name build check the build"}}})
	var set string
	if !w.fake.Wait(wait, func(v discordtest.View) bool {
		in, _ := v.Interaction(id)
		m, _ := v.Message(in.Original)
		set = m.Content
		return strings.Contains(set, "Scheduled")
	}) {
		t.Fatalf("no answer to /every; last %q", set)
	}
	if !strings.Contains(set, "every Monday to Friday at 09:00") {
		t.Errorf("the answer to /every: %q", set)
	}
	sid := between(set, "Scheduled `", "`")
	w.fake.Command(discordtest.Slash{Channel: "c1", Guild: "g1", User: "u1", Name: "runnow", Options: []discordtest.Option{{Name: "id", Value: sid}}})
	answer := func(want string) {
		t.Helper()
		if !w.fake.Wait(wait, func(v discordtest.View) bool {
			for _, m := range v.Messages("c1") {
				if m.Content == want {
					return true
				}
			}
			return false
		}) {
			var got []string
			for _, m := range w.fake.Messages("c1") {
				got = append(got, m.Content)
			}
			t.Fatalf("no message %q in c1: %q", want, got)
		}
	}
	answer("⏰ build · now\n\necho: check the build")
	wctx, stop := context.WithTimeout(context.Background(), wait)
	defer stop()
	if err := clock.BlockUntilContext(wctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	answer("⏰ build · 09:00\n\necho: check the build")
}

func between(s, a, b string) string {
	_, after, _ := strings.Cut(s, a)
	in, _, _ := strings.Cut(after, b)
	return in
}
