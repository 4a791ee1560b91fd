package slack

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/slack/slacktest"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/schedule"
	"github.com/golem-chat/golem/store"
	"github.com/jonboulle/clockwork"
)

// scheduled is golem on the fake Slack with its schedule loop running on
// a fake clock, as `bot serve` wires it.
type scheduled struct {
	*bot
	clock    *clockwork.FakeClock
	book     *schedule.Book
	loopStop func()
}

var scheduleStart = time.Date(2026, 12, 7, 8, 59, 0, 0, time.UTC) // a Monday

func startScheduled(t *testing.T, fake *slacktest.Server, db string, clock *clockwork.FakeClock, cfg botConfig) *scheduled {
	t.Helper()
	s := &scheduled{clock: clock}
	tune := cfg.tune
	cfg.db = db
	cfg.tune = func(o *core.Options) {
		s.book = schedule.New(schedule.Options{Store: o.Store, Clock: clock, BusyWait: 300 * time.Millisecond, Logger: o.Logger})
		o.Schedules = s.book
		if tune != nil {
			tune(o)
		}
	}
	s.bot = startBot(t, fake, filepath.Join(t.TempDir(), "agent.log"), cfg)
	s.book.Bind(s.Dispatcher)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.book.Run(ctx); close(done) }()
	s.loopStop = func() { cancel(); <-done }
	t.Cleanup(s.loopStop) // before the bot stops
	s.sleeping()
	return s
}

// sleeping waits until the loop waits for its clock.
func (s *scheduled) sleeping() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.clock.BlockUntilContext(ctx, 1); err != nil {
		s.t.Fatal("the schedule loop did not go back to sleep")
	}
}

// command sends /golem NAME ARGS in C1 and returns the bot's answer that
// contains want.
func (s *scheduled) command(text, want string) string {
	s.t.Helper()
	before := len(s.fake.BotMessages("C1"))
	if _, err := s.fake.SlashCommand("U1", "C1", "/golem", text); err != nil {
		s.t.Fatal(err)
	}
	return s.posted(before, want)
}

// posted waits for a bot message in C1, after the first before, that
// contains want.
func (s *scheduled) posted(before int, want string) string {
	s.t.Helper()
	var got string
	if !s.fake.Wait(30*time.Second, func() bool {
		for _, m := range s.fake.BotMessages("C1")[min(before, len(s.fake.BotMessages("C1"))):] {
			if strings.Contains(m.Text, want) {
				got = m.Text
				return true
			}
		}
		return false
	}) {
		var texts []string
		for _, m := range s.fake.BotMessages("C1") {
			texts = append(texts, m.Text)
		}
		s.t.Fatalf("no bot message with %q; bot messages: %q", want, texts)
	}
	return got
}

// answerOf waits for a scheduled run's answer in C1 (its header and the
// agent's echo), after the first before bot messages.
func (s *scheduled) answerOf(before int, header, prompt string) slacktest.Message {
	s.t.Helper()
	want := header + "\n\necho: " + prompt
	var found slacktest.Message
	if !s.fake.Wait(30*time.Second, func() bool {
		msgs := s.fake.BotMessages("C1")
		for _, m := range msgs[min(before, len(msgs)):] {
			if m.Text == want {
				found = m
				return true
			}
		}
		return false
	}) {
		var texts []string
		for _, m := range s.fake.BotMessages("C1") {
			texts = append(texts, m.Text)
		}
		s.t.Fatalf("no answer %q; bot messages: %q", want, texts)
	}
	return found
}

func newScheduled(t *testing.T, cfg botConfig) (*scheduled, *slacktest.Server) {
	fake := slacktest.New(slacktest.Options{PingInterval: time.Second})
	t.Cleanup(fake.Close)
	return startScheduled(t, fake, "", clockwork.NewFakeClockAt(scheduleStart), cfg), fake
}

// TestE2EScheduleSetListRunPauseDelete sets a schedule from Slack, lists
// it, runs it now and at its time (each answer a new message in the
// channel, under its header line, in a fresh agent session that leaves the
// conversation's own alone), pauses and deletes it.
func TestE2EScheduleSetListRunPauseDelete(t *testing.T) {
	s, _ := newScheduled(t, botConfig{})
	d := s.say(slacktest.Event{Channel: "C1", Text: mention + " remember me"})
	s.answer("C1", d.TS, "echo: remember me")

	set := s.command(`every "0 9 * * 1-5" --name daily-build check the nightly build`, "Scheduled")
	id := between(set, "`", "`")
	for _, want := range []string{"(daily-build)", "every Monday to Friday at 09:00", "time zone UTC", "Next runs: Mon 7 Dec 09:00, Tue 8 Dec 09:00, Wed 9 Dec 09:00"} {
		if !strings.Contains(set, want) {
			t.Errorf("the answer to /every lacks %q: %q", want, set)
		}
	}
	list := s.command("schedules", "Schedules")
	if !strings.Contains(list, id) || !strings.Contains(list, "next Mon 7 Dec 09:00") || !strings.Contains(list, "check the nightly build") {
		t.Errorf("/schedules = %q", list)
	}

	before := len(s.fake.BotMessages("C1"))
	s.command("runnow "+id, "runs now")
	ans := s.answerOf(before, "⏰ daily-build · now", "check the nightly build")
	if ans.ThreadTS != "" {
		t.Errorf("a run's answer is in thread %q, want a new message in the channel", ans.ThreadTS)
	}

	s.sleeping()
	before = len(s.fake.BotMessages("C1"))
	s.clock.Advance(time.Minute) // 09:00
	s.answerOf(before, "⏰ daily-build · 09:00", "check the nightly build")

	runs := s.runs()
	if len(runs) != 3 {
		t.Fatalf("%d agent runs, want 3", len(runs))
	}
	for _, r := range runs[1:] {
		if id, ok := r.Flag("--resume"); ok {
			t.Errorf("a scheduled run resumed session %q; want a fresh one", id)
		}
	}
	d = s.say(slacktest.Event{Channel: "C1", Text: mention + " and now?"})
	s.answer("C1", d.TS, "echo: and now?")
	if id, _ := s.runs()[3].Flag("--resume"); id != runs[0].SessionID {
		t.Errorf("after the scheduled runs the person's turn resumed %q, want the conversation's session %q", id, runs[0].SessionID)
	}

	// /schedules has buttons: Pause is one click.
	s.command("schedules", "Schedules")
	var q slacktest.Message
	for _, m := range s.fake.BotMessages("C1") {
		if strings.Contains(m.Blocks, "golem:pause:"+id) {
			q = m
		}
	}
	if q.TS == "" || !strings.Contains(q.Blocks, "golem:runnow:"+id) || !strings.Contains(q.Blocks, "golem:unschedule:"+id) {
		t.Fatalf("/schedules has no Run now, Pause and Delete buttons: %q", q.Blocks)
	}
	if _, err := s.fake.Click("U1", "C1", q.ThreadTS, q.TS, "golem:pause:"+id); err != nil {
		t.Fatal(err)
	}
	if !s.fake.Wait(20*time.Second, func() bool {
		m, _ := s.fake.Message("C1", q.TS)
		return strings.Contains(m.Text, "paused") && !strings.Contains(m.Blocks, "golem:pause:")
	}) {
		m, _ := s.fake.Message("C1", q.TS)
		t.Fatalf("the clicked list reads %q (blocks %q)", m.Text, m.Blocks)
	}
	if sc, _, _ := s.Store.Schedule(id); !sc.Paused {
		t.Error("the Pause button did not pause it")
	}
	s.sleeping()
	s.clock.Advance(24 * time.Hour) // Tuesday 09:00: paused
	s.sleeping()
	if p := s.command("schedules", "Schedules"); !strings.Contains(p, "**paused**") && !strings.Contains(p, "*paused*") {
		t.Errorf("/schedules of a paused one = %q", p)
	}
	s.command("unschedule "+id, "deleted")
	s.command("schedules", "No schedules")
	if n := len(s.runs()); n != 4 {
		t.Errorf("%d agent runs, want 4: a paused schedule ran", n)
	}
}

// TestE2EScheduleSkipsABusyConversation: a run that comes while a
// person's turn runs waits busy_wait, then is skipped; the person's turn
// goes on untouched.
func TestE2EScheduleSkipsABusyConversation(t *testing.T) {
	s, _ := newScheduled(t, botConfig{})
	set := s.command(`every "0 9 * * *" nightly`, "Scheduled")
	id := between(set, "`", "`")
	d := s.say(slacktest.Event{Channel: "C1", Text: mention + " !sleep 3s\nlong one"})
	if !s.fake.Wait(20*time.Second, func() bool { return len(s.runs()) == 1 }) {
		t.Fatal("the person's turn did not start")
	}
	s.sleeping()
	s.clock.Advance(time.Minute)
	if !s.fake.Wait(20*time.Second, func() bool {
		sc, _, _ := s.Store.Schedule(id)
		return sc.LastOutcome != ""
	}) {
		t.Fatal("the run was not recorded")
	}
	if sc, _, _ := s.Store.Schedule(id); sc.LastOutcome != core.PromptSkippedBusy {
		t.Errorf("the run ended %q, want %q", sc.LastOutcome, core.PromptSkippedBusy)
	}
	s.answer("C1", d.TS, "echo: long one")
	if n := len(s.runs()); n != 1 {
		t.Errorf("%d agent runs, want the person's alone", n)
	}
	if l := s.command("schedules", "Schedules"); !strings.Contains(l, "skipped busy") {
		t.Errorf("/schedules = %q", l)
	}
}

// TestE2EScheduleAfterAccessRemovedAndOverBudget restarts golem with the
// person who set a schedule no longer allowed: its run does not start,
// and it is paused with a note; then allowed again but past the budget:
// skipped with the budget's note.
func TestE2EScheduleAfterAccessRemovedAndOverBudget(t *testing.T) {
	fake := slacktest.New(slacktest.Options{PingInterval: time.Second})
	t.Cleanup(fake.Close)
	db := filepath.Join(t.TempDir(), "golem.db")
	clock := clockwork.NewFakeClockAt(scheduleStart)
	s := startScheduled(t, fake, db, clock, botConfig{})
	id := between(s.command(`every "@every 1h" hourly report`, "Scheduled"), "`", "`")
	s.loopStop()
	s.stop()

	s = startScheduled(t, fake, db, clock, botConfig{tune: func(o *core.Options) { o.Allow = []string{"slack:U2"} }})
	before := len(fake.BotMessages("C1"))
	clock.Advance(time.Hour)
	note := s.posted(before, "is paused")
	if !strings.Contains(note, id) || !strings.Contains(note, "may not use the bot any more") {
		t.Errorf("note %q", note)
	}
	if n := len(s.runs()); n != 0 {
		t.Errorf("%d agent runs for a person no longer allowed", n)
	}
	s.loopStop()
	s.stop()

	s = startScheduled(t, fake, db, clock, botConfig{tune: func(o *core.Options) {
		o.Budgets = core.Budgets{DailyUSDPerUser: 1}
		o.Now = clock.Now
	}})
	if err := s.Store.AddUsage(store.NewKey("slack", "T1", "C1", ""), "slack:U1", clock.Now(), store.Usage{Turns: 1, CostUSD: 2}); err != nil {
		t.Fatal(err)
	}
	s.command("unpause "+id, "resumed")
	s.sleeping()
	before = len(fake.BotMessages("C1"))
	clock.Advance(time.Hour)
	if note := s.posted(before, "daily budget"); !strings.Contains(note, "💸") {
		t.Errorf("budget note %q", note)
	}
	if n := len(s.runs()); n != 0 {
		t.Errorf("%d agent runs past the budget", n)
	}
}

func between(s, a, b string) string {
	_, after, _ := strings.Cut(s, a)
	in, _, _ := strings.Cut(after, b)
	return in
}

// TestE2EScheduleRestartCatchUp stops golem over a run: back within
// catch_up, the missed run is answered at start; back past it, nothing
// runs then, and the next run says the missed one was skipped. The runs
// count in /usage as the person's.
func TestE2EScheduleRestartCatchUp(t *testing.T) {
	fake := slacktest.New(slacktest.Options{PingInterval: time.Second})
	t.Cleanup(fake.Close)
	db := filepath.Join(t.TempDir(), "golem.db")
	clock := clockwork.NewFakeClockAt(scheduleStart)
	s := startScheduled(t, fake, db, clock, botConfig{})
	s.command(`every "0 9 * * *" --name nine report`, "Scheduled")
	restart := func(down time.Duration) {
		s.loopStop()
		s.stop()
		clock.Advance(down)
		s = startScheduled(t, fake, db, clock, botConfig{})
	}

	before := len(fake.BotMessages("C1"))
	restart(30 * time.Minute) // Monday 09:29: 09:00 missed by 29 min
	s.answerOf(before, "⏰ nine · 09:00", "report")

	restart(26*time.Hour + 31*time.Minute) // Tuesday 12:00: 09:00 missed by 3 h
	s.sleeping()
	if n := len(s.runs()); n != 0 { // this start's agent log
		t.Fatalf("%d agent runs; a run missed by 3 h ran at start", n)
	}
	before = len(fake.BotMessages("C1"))
	clock.Advance(21 * time.Hour) // Wednesday 09:00
	s.answerOf(before, "⏰ nine · 09:00\n_(the run of Tue 8 Dec 09:00 was skipped: golem was not running then)_", "report")
	if u := s.command("usage", "Usage"); !strings.Contains(u, "This conversation: 2 turns") {
		t.Errorf("/usage = %q", u)
	}
}

// TestE2EScheduledRunTakesNoSteering: a person's message while a
// scheduled run's turn runs is not steered into it (that run is in a
// session of its own): it waits and gets a turn and an answer of its own.
func TestE2EScheduledRunTakesNoSteering(t *testing.T) {
	s, _ := newScheduled(t, botConfig{})
	id := between(s.command(`every "0 9 * * *" --name slow !sleep 1500ms
report`, "Scheduled"), "`", "`")
	before := len(s.fake.BotMessages("C1"))
	s.command("runnow "+id, "runs now")
	if !s.fake.Wait(20*time.Second, func() bool { return len(s.runs()) == 1 }) {
		t.Fatal("the scheduled run did not start")
	}
	d := s.say(slacktest.Event{Channel: "C1", Text: mention + " meanwhile"})
	s.answerOf(before, "⏰ slow · now", "report")
	s.answer("C1", d.TS, "echo: meanwhile")
	for _, c := range s.fake.Calls("reactions.add") {
		if c.Args["name"] == "eyes" {
			t.Errorf("the person's message was acknowledged as steered into the scheduled run: %+v", c.Args)
		}
	}
	runs := s.runs()
	if len(runs) != 2 || !strings.Contains(runs[1].Prompt, "meanwhile") {
		t.Fatalf("agent runs %+v, want the schedule's and the person's own", runs)
	}
	if id, _ := runs[1].Flag("--resume"); id == runs[0].SessionID {
		t.Error("the person's turn resumed the scheduled run's fresh session")
	}
}
