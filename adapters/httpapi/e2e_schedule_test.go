package httpapi

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/bottest"
	"github.com/golem-chat/golem/schedule"
	"github.com/jonboulle/clockwork"
)

// TestE2EScheduleCommandsOverHTTP manages a schedule with the chat
// commands through the real HTTP API, as README's HTTP API section has a
// client do it, with the fake agent and the schedule loop on a fake clock:
// /every sets it, /schedules lists it, /runnow runs it once (its answer
// kept for GET /v1/conversations/{key}/runs, not streamed to the /runnow
// request), /unschedule deletes it and /schedules then says there is none.
// An id that is not one of the conversation's is refused, naming it.
func TestE2EScheduleCommandsOverHTTP(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 12, 7, 8, 59, 0, 0, time.UTC))
	var book *schedule.Book
	ln, base := listen(t)
	b := bottest.New(t, bottest.Options{Trusted: []string{"http"}, Tune: func(o *core.Options) {
		book = schedule.New(schedule.Options{Store: o.Store, Clock: clock, Logger: o.Logger})
		o.Schedules = book
	}})
	book.Bind(b.Dispatcher)
	s, err := New(Options{Listener: ln, Logger: testLogger(t), Operator: b.Dispatcher, Store: b.Store})
	if err != nil {
		t.Fatal(err)
	}
	b.Start(s)
	ctx, cancel := context.WithCancel(context.Background())
	loop := make(chan struct{})
	go func() { book.Run(ctx); close(loop) }()
	t.Cleanup(func() { cancel(); <-loop })

	// say posts text to conversation and returns what the stream said: its
	// text, and whether it ended done.
	say := func(conversation, text string) (string, bool) {
		t.Helper()
		evs := chatEvents(t, base, conversation, text)
		last := evs[len(evs)-1]
		if last.Type == "error" {
			return last.Message, false
		}
		return answerText(evs), true
	}
	set := func(conversation, text string) string {
		t.Helper()
		answer, ok := say(conversation, text)
		m := regexp.MustCompile("^⏰ Scheduled `([0-9a-f]{4})`").FindStringSubmatch(answer)
		if !ok || m == nil {
			t.Fatalf("%s answered %q (done %t)", text, answer, ok)
		}
		return m[1]
	}
	runsURL := base + "/v1/conversations/" + url.PathEscape("http::builds") + "/runs" // README: http::ID, path-escaped

	id := set("builds", `/every "@every 1h" --name hourly check the build`)
	other := set("elsewhere", `/every "@every 2h" not this one`)

	list, ok := say("builds", "/schedules")
	wantList := "**Schedules** (`/runnow ID` · `/pause ID` · `/unschedule ID`)\n" +
		"• `" + id + "` hourly — every 1h, UTC — next Mon 7 Dec 09:59\n    _check the build_"
	if !ok || list != wantList {
		t.Errorf("/schedules answered (done %t)\n%s\nwant\n%s", ok, list, wantList)
	}

	now, ok := say("builds", "/runnow "+id)
	if !ok || now != "⏰ Schedule `"+id+"` runs now." {
		t.Errorf("/runnow answered %q (done %t)", now, ok)
	}
	var got struct{ Runs []runJSON }
	eventually(t, "the run listed in /runs", func() bool {
		got = getRuns(t, runsURL)
		return len(got.Runs) > 0
	})
	if run := got.Runs[0]; len(got.Runs) != 1 || run.Schedule != id || run.Header != "⏰ hourly · now" ||
		run.Outcome != "done" || run.Text != "echo: check the build" || run.Error != "" {
		t.Errorf("/runs after /runnow: %+v", got.Runs)
	}
	eventually(t, "/schedules shows the run", func() bool {
		list, _ = say("builds", "/schedules")
		return strings.Contains(list, "— last Mon 7 Dec 08:59: done")
	})
	if invs := b.Invocations(); len(invs) != 1 || !strings.Contains(invs[0].Prompt, "check the build") {
		t.Errorf("the agent ran %d times for one /runnow: %+v", len(invs), invs)
	}
	if kept := getRuns(t, base+"/v1/conversations/"+url.PathEscape("http::elsewhere")+"/runs"); len(kept.Runs) != 0 {
		t.Errorf("the other conversation has runs: %+v", kept.Runs)
	}

	for _, tc := range []struct{ text, want string }{
		{"/runnow zzzz", "⚠️ /runnow: no schedule `zzzz` in this conversation; /schedules lists them."},
		{"/unschedule zzzz", "⚠️ /unschedule: no schedule `zzzz` in this conversation; /schedules lists them."},
		{"/unschedule", "⚠️ /unschedule: which schedule? `/unschedule ID`; /schedules lists them."},
		{"/runnow " + other, "⚠️ /runnow: no schedule `" + other + "` in this conversation; /schedules lists them."},
		{"/unschedule " + other, "⚠️ /unschedule: no schedule `" + other + "` in this conversation; /schedules lists them."},
	} {
		if answer, _ := say("builds", tc.text); answer != tc.want {
			t.Errorf("%s answered %q, want %q", tc.text, answer, tc.want)
		}
	}

	if gone, ok := say("builds", "/unschedule "+id); !ok || gone != "🗑️ Schedule `"+id+"` deleted." {
		t.Errorf("/unschedule answered %q (done %t)", gone, ok)
	}
	if list, ok := say("builds", "/schedules"); !ok || list != "No schedules in this conversation. `/every \"0 9 * * 1-5\" PROMPT` or `/at 09:00 PROMPT` sets one." {
		t.Errorf("/schedules after /unschedule answered %q (done %t)", list, ok)
	}
	if again, _ := say("builds", "/runnow "+id); again != "⚠️ /runnow: no schedule `"+id+"` in this conversation; /schedules lists them." {
		t.Errorf("/runnow of the deleted schedule answered %q", again)
	}
	if list, _ := say("elsewhere", "/schedules"); !strings.Contains(list, "• `"+other+"` — every 2h") {
		t.Errorf("the other conversation's schedule is gone: %q", list)
	}
	if invs := b.Invocations(); len(invs) != 1 {
		t.Errorf("the agent ran %d times, want once (the /runnow)", len(invs))
	}
}
