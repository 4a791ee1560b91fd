package schedule_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/schedule"
	"github.com/golem-chat/golem/store"
	"github.com/jonboulle/clockwork"
)

// runner is a schedule.Runner that records what it is asked and answers
// with outcome.
type runner struct {
	mu      sync.Mutex
	outcome func(p core.Prompt) string
	runs    chan core.Prompt
	notes   chan string
}

func newRunner() *runner {
	return &runner{runs: make(chan core.Prompt, 100), notes: make(chan string, 100),
		outcome: func(core.Prompt) string { return "done" }}
}

func (r *runner) RunPrompt(_ context.Context, p core.Prompt) string {
	r.mu.Lock()
	o := r.outcome
	r.mu.Unlock()
	r.runs <- p
	return o(p)
}

func (r *runner) Notify(_ core.Prompt, text string) { r.notes <- text }

func (r *runner) set(o func(core.Prompt) string) { r.mu.Lock(); r.outcome = o; r.mu.Unlock() }

func (r *runner) next(t *testing.T) core.Prompt {
	t.Helper()
	select {
	case p := <-r.runs:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no run")
	}
	return core.Prompt{}
}

func (r *runner) none(t *testing.T) {
	t.Helper()
	select {
	case p := <-r.runs:
		t.Fatalf("an unexpected run: %+v", p)
	default:
	}
}

func (r *runner) note(t *testing.T) string {
	t.Helper()
	select {
	case n := <-r.notes:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no note")
	}
	return ""
}

// bed is a Book on a bbolt store and a fake clock, its loop running.
type bed struct {
	t      *testing.T
	db     string
	clock  *clockwork.FakeClock
	st     store.Store
	book   *schedule.Book
	runner *runner
	stop   func()
}

var t0 = time.Date(2026, 12, 7, 8, 59, 0, 0, time.UTC) // a Monday

func newBed(t *testing.T, db string, clock *clockwork.FakeClock, opts schedule.Options) *bed {
	t.Helper()
	if db == "" {
		db = filepath.Join(t.TempDir(), "golem.db")
	}
	if clock == nil {
		clock = clockwork.NewFakeClockAt(t0)
	}
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	b := &bed{t: t, db: db, clock: clock, st: st, runner: newRunner()}
	opts.Store, opts.Clock, opts.Runner = st, clock, b.runner
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	b.book = schedule.New(opts)
	return b
}

// start runs the loop and waits until it sleeps.
func (b *bed) start() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.book.Run(ctx); close(done) }()
	b.stop = func() { cancel(); <-done; b.st.Close() }
	b.t.Cleanup(func() {
		if b.stop != nil {
			b.stop()
		}
	})
	b.sleeping()
}

// sleeping waits until the loop waits on its timer.
func (b *bed) sleeping() {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.clock.BlockUntilContext(ctx, 1); err != nil {
		b.t.Fatal("the loop did not go back to sleep")
	}
}

// advance moves the clock and lets the loop see it.
func (b *bed) advance(d time.Duration) {
	b.clock.Advance(d)
	b.sleeping()
}

var msg = core.Message{Platform: "slack", Workspace: "T1", Channel: "C1", User: "U1", UserName: "ann", ID: "1.0"}

func (b *bed) command(name, args string) string {
	return b.book.Command(msg, core.KeyFor(msg, core.ScopeChannel), name, args)
}

func TestLoopFiresEachInstantOnce(t *testing.T) {
	b := newBed(t, "", nil, schedule.Options{})
	b.start()
	ans := b.command("every", `"0 9 * * 1-5" --name daily-build check the nightly build`)
	if !strings.Contains(ans, "Next runs: Mon 7 Dec 09:00, Tue 8 Dec 09:00, Wed 9 Dec 09:00") || !strings.Contains(ans, "time zone UTC") {
		t.Fatalf("answer %q", ans)
	}
	b.sleeping()
	b.advance(30 * time.Second)
	b.runner.none(t)
	b.advance(30 * time.Second) // 09:00
	p := b.runner.next(t)
	if p.Header != "⏰ daily-build · 09:00" || p.Text != "check the nightly build" || p.User != "U1" || p.Channel != "C1" || !p.Fresh {
		t.Errorf("run %+v", p)
	}
	b.advance(time.Hour)
	b.runner.none(t)
	b.advance(24 * time.Hour)
	if p := b.runner.next(t); p.Header != "⏰ daily-build · 09:00" {
		t.Errorf("second run %+v", p)
	}
	b.runner.none(t)
	var list string
	eventually(t, "the run recorded", func() bool {
		list = b.command("schedules", "")
		return strings.Contains(list, ": done")
	})
	if !strings.Contains(list, "daily-build") || !strings.Contains(list, "next Wed 9 Dec 09:00") || !strings.Contains(list, " — last ") {
		t.Errorf("/schedules = %q", list)
	}
}

// TestRestartCatchUp stops golem over a run: within catch_up it runs once
// at start; past it, it is skipped and the next run says so.
func TestRestartCatchUp(t *testing.T) {
	for _, tt := range []struct {
		name string
		down time.Duration
		runs bool
	}{{"within", 30 * time.Minute, true}, {"past", 3 * time.Hour, false}} {
		t.Run(tt.name, func(t *testing.T) {
			b := newBed(t, "", nil, schedule.Options{})
			b.start()
			b.command("every", `"0 9 * * *" p`)
			b.sleeping()
			b.stop() // down from 08:59
			b.stop = nil
			b.clock.Advance(time.Minute + tt.down) // 09:30 or 12:00; 09:00 missed
			b = newBed(t, b.db, b.clock, schedule.Options{})
			b.start()
			if !tt.runs {
				b.runner.none(t)
				b.advance(24*time.Hour - tt.down) // 09:00 the next day
				p := b.runner.next(t)
				if !strings.Contains(p.Header, "⏰") || !strings.Contains(p.Header, "was skipped: golem was not running then") {
					t.Errorf("the run after a skipped one: header %q", p.Header)
				}
				b.runner.none(t)
				return
			}
			if p := b.runner.next(t); p.Header != "⏰ "+p.Header[len("⏰ "):len("⏰ ")+4]+" · 09:00" {
				t.Errorf("catch-up run %+v", p)
			}
			b.sleeping()
			b.advance(time.Hour)
			b.runner.none(t) // once
			b.advance(23 * time.Hour)
			if p := b.runner.next(t); strings.Contains(p.Header, "skipped") {
				t.Errorf("the next run %q", p.Header)
			}
		})
	}
}

// TestCatchUpNeverStillRunsOnTime: with catch_up off, an instant the loop
// reaches a little late (its own delay) still runs; one missed by more
// than a minute does not.
func TestCatchUpNeverStillRunsOnTime(t *testing.T) {
	b := newBed(t, "", nil, schedule.Options{CatchUp: -1})
	b.start()
	b.command("every", `"0 9 * * *" p`)
	b.sleeping()
	b.advance(90 * time.Second) // 09:00:30
	b.runner.next(t)
	b.stop()
	b.stop = nil
	b.clock.Advance(24*time.Hour + 2*time.Minute) // down over the next 09:00, back at 09:02:30
	b = newBed(t, b.db, b.clock, schedule.Options{CatchUp: -1})
	b.start()
	b.stop()
	b.stop = nil
	b.runner.none(t)
}

func TestFailuresPause(t *testing.T) {
	b := newBed(t, "", nil, schedule.Options{})
	b.runner.set(func(core.Prompt) string { return "failed" })
	b.start()
	b.command("every", `"@every 1m" p`)
	b.sleeping()
	for range schedule.MaxFailures {
		b.advance(time.Minute)
		b.runner.next(t)
	}
	if n := b.runner.note(t); !strings.Contains(n, "is paused: its last 5 runs failed") {
		t.Errorf("note %q", n)
	}
	b.sleeping()
	b.advance(5 * time.Minute)
	b.runner.none(t)
	if l := b.command("schedules", ""); !strings.Contains(l, "**paused**") {
		t.Errorf("/schedules = %q", l)
	}
}

// TestFailedRunBacksOff: a failed run is tried again 1 min, then 2 min
// later, until it works; the next run still comes on time, and retries
// never pass it.
func TestFailedRunBacksOff(t *testing.T) {
	b := newBed(t, "", nil, schedule.Options{})
	fails := 2
	b.runner.set(func(core.Prompt) string {
		if fails > 0 {
			fails--
			return "error"
		}
		return "done"
	})
	b.start()
	b.command("every", `"0 9 * * *" --name build p`)
	b.sleeping()
	b.advance(time.Minute) // 09:00: fails
	if p := b.runner.next(t); p.Header != "⏰ build · 09:00" {
		t.Errorf("header %q", p.Header)
	}
	recorded := func(n int) {
		eventually(t, "the failure recorded", func() bool {
			all, _ := b.st.AllSchedules()
			return len(all) == 1 && all[0].Failures == n && (n == 0 || !all[0].Retry.IsZero())
		})
		b.sleeping()
	}
	recorded(1)
	b.advance(59 * time.Second)
	b.runner.none(t)
	b.advance(time.Second) // 09:01
	if p := b.runner.next(t); p.Header != "⏰ build · 09:00 · retry 1" {
		t.Errorf("first retry %q", p.Header)
	}
	recorded(2)
	b.advance(time.Minute)
	b.runner.none(t)
	b.advance(time.Minute) // 09:03: works
	if p := b.runner.next(t); p.Header != "⏰ build · 09:00 · retry 2" {
		t.Errorf("second retry %q", p.Header)
	}
	recorded(0)
	b.advance(time.Hour)
	b.runner.none(t)
	b.advance(23*time.Hour - 3*time.Minute) // the next day, on time
	if p := b.runner.next(t); p.Header != "⏰ build · 09:00" {
		t.Errorf("the next run %q", p.Header)
	}
}

// TestShutdownBeforeTurnUnfires: a run that golem's shutdown cut short
// before its turn began (it waited for a busy conversation) runs at the
// next start, within catch_up; one whose turn had begun does not.
func TestShutdownBeforeTurnUnfires(t *testing.T) {
	for _, tt := range []struct {
		outcome string
		again   bool
	}{{core.PromptShutdown, true}, {core.PromptStarted, false}} {
		t.Run(tt.outcome, func(t *testing.T) {
			b := newBed(t, "", nil, schedule.Options{})
			b.runner.set(func(core.Prompt) string { return tt.outcome })
			b.start()
			b.command("every", `"0 9 * * *" p`)
			b.sleeping()
			b.advance(time.Minute)
			b.runner.next(t)
			b.stop() // waits for the run's record
			b.stop = nil
			b = newBed(t, b.db, b.clock, schedule.Options{})
			b.clock.Advance(10 * time.Minute)
			b.start()
			if tt.again {
				if p := b.runner.next(t); !strings.HasSuffix(p.Header, " · 09:00") {
					t.Errorf("the run again: %q", p.Header)
				}
			}
			b.stop()
			b.stop = nil
			b.runner.none(t)
		})
	}
}

func TestAccessRemovedPauses(t *testing.T) {
	b := newBed(t, "", nil, schedule.Options{})
	b.runner.set(func(core.Prompt) string { return core.PromptDenied })
	b.start()
	b.command("every", `"@every 1m" p`)
	b.sleeping()
	b.advance(time.Minute)
	b.runner.next(t)
	if n := b.runner.note(t); !strings.Contains(n, "may not use the bot any more") {
		t.Errorf("note %q", n)
	}
	b.sleeping()
	b.advance(3 * time.Minute)
	b.runner.none(t)
}

func TestRunNowPauseDelete(t *testing.T) {
	b := newBed(t, "", nil, schedule.Options{})
	b.start()
	ans := b.command("every", `@daily p`)
	id := between(ans, "`", "`")
	if a := b.command("runnow", id); !strings.Contains(a, "runs now") {
		t.Fatalf("/runnow: %q", a)
	}
	if p := b.runner.next(t); p.Header != "⏰ "+id+" · now" {
		t.Errorf("header %q", p.Header)
	}
	b.sleeping()
	b.command("pause", id)
	b.sleeping()
	b.advance(24 * time.Hour)
	b.runner.none(t)
	if a := b.command("unschedule", "nope"); !strings.Contains(a, "no schedule `nope` in this conversation") {
		t.Errorf("/unschedule nope: %q", a)
	}
	other := core.Message{Platform: "slack", Workspace: "T1", Channel: "C2", User: "U1"}
	if a := b.book.Command(other, core.KeyFor(other, core.ScopeChannel), "pause", id); !strings.Contains(a, "no schedule") {
		t.Errorf("another conversation paused it: %q", a)
	}
	if a := b.command("unschedule", id); !strings.Contains(a, "deleted") {
		t.Errorf("/unschedule: %q", a)
	}
	if l := b.command("schedules", ""); !strings.Contains(l, "No schedules") {
		t.Errorf("/schedules after delete = %q", l)
	}
}

func TestOnceRunsAndIsForgotten(t *testing.T) {
	b := newBed(t, "", nil, schedule.Options{})
	b.start()
	ans := b.command("at", `in 2h --name later look again`)
	if !strings.Contains(ans, "once, at Mon 7 Dec 2026 10:59") || !strings.Contains(ans, "Runs: Mon 7 Dec 10:59") {
		t.Fatalf("answer %q", ans)
	}
	b.command("runnow", between(ans, "`", "`")) // runs now, and still at its time
	if p := b.runner.next(t); p.Header != "⏰ later · now" {
		t.Errorf("header %q", p.Header)
	}
	b.sleeping()
	b.advance(2 * time.Hour)
	if p := b.runner.next(t); p.Header != "⏰ later · 10:59" {
		t.Errorf("header %q", p.Header)
	}
	eventually(t, "the once forgotten after its run", func() bool {
		all, err := b.st.AllSchedules()
		return err == nil && len(all) == 0
	})
	b.sleeping()
	b.advance(24 * time.Hour)
	b.runner.none(t)
	if l := b.command("schedules", ""); !strings.Contains(l, "No schedules") {
		t.Errorf("a once is listed after its run: %q", l)
	}
}

func TestBadInputSavesNothing(t *testing.T) {
	b := newBed(t, "", nil, schedule.Options{Max: 1})
	for _, tt := range []struct{ cmd, args, want string }{
		{"every", `"61 9 * * *" p`, "is not a schedule"},
		{"at", `2020-01-01 09:00 p`, "in the past"},
		{"every", `TZ=Nowhere/City @daily p`, "unknown time zone"},
		{"every", `@daily`, "prompt is missing"},
	} {
		if a := b.command(tt.cmd, tt.args); !strings.HasPrefix(a, "⚠️ /"+tt.cmd+": ") || !strings.Contains(a, tt.want) || strings.Contains(a, "\n") {
			t.Errorf("/%s %s = %q, want one line naming %q", tt.cmd, tt.args, a, tt.want)
		}
	}
	if all, _ := b.st.AllSchedules(); len(all) != 0 {
		t.Fatalf("bad input saved %+v", all)
	}
	b.command("every", `@daily p`)
	if a := b.command("every", `@daily q`); !strings.Contains(a, "`schedules.max`") {
		t.Errorf("over max: %q", a)
	}
	b.st.Close()
}

// TestTwoLoopsFireOnce runs two replicas' loops over one store (as while
// the leadership moves): each instant runs once.
func TestTwoLoopsFireOnce(t *testing.T) {
	a := newBed(t, "", nil, schedule.Options{})
	a.command("every", `"@every 1m" p`)
	second := schedule.New(schedule.Options{Store: a.st, Clock: a.clock, Runner: a.runner, Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { second.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	a.start()
	waitCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	for range 5 {
		if err := a.clock.BlockUntilContext(waitCtx, 2); err != nil {
			t.Fatal(err)
		}
		a.clock.Advance(time.Minute)
		a.runner.next(t)
	}
	if err := a.clock.BlockUntilContext(waitCtx, 2); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	a.stop() // both loops stopped: every firing under way has ended
	a.stop = nil
	a.runner.none(t)
}

// eventually waits for what a run's goroutine records after the run
// (nothing tells when it is written).
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for start := time.Now(); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("not so after 10 s: %s", what)
		}
	}
}

func between(s, a, b string) string {
	_, after, _ := strings.Cut(s, a)
	in, _, _ := strings.Cut(after, b)
	return in
}
