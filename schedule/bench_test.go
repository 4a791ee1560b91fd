package schedule_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/internal/bottest"
	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/schedule"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/store/etcdstore"
	"github.com/jonboulle/clockwork"
)

// fill saves n daily schedules spread over the day's minutes (about 7 a
// minute), or all in hour 3 when quiet, in conversations of 20 schedules
// each; 8 writers at once, so that an etcd store fills in seconds.
func fill(tb testing.TB, st store.Store, n int, created time.Time, quiet bool) {
	tb.Helper()
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				key := store.NewKey("slack", "T1", fmt.Sprint("C", i/20), "")
				hour := i / 60 % 24
				if quiet {
					hour = 3
				}
				sc := store.Schedule{ID: fmt.Sprintf("b%05d", i), Key: key, Platform: "slack", Workspace: "T1", Channel: key.Channel, User: "U1",
					Spec: fmt.Sprintf("%d %d * * *", i%60, hour), Prompt: "p", Created: created}
				if err := st.SaveSchedule(sc); err != nil {
					tb.Error(err)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if tb.Failed() {
		tb.FailNow()
	}
}

func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countRunner answers every run done at once.
type countRunner struct{ runs atomic.Int64 }

func (r *countRunner) RunPrompt(context.Context, core.Prompt) string { r.runs.Add(1); return "done" }
func (r *countRunner) Notify(core.Prompt, string)                    {}

// quietSlack is a platform named slack that posts nowhere: the runs'
// answers need a place to go.
type quietSlack struct{}

func (quietSlack) Platform() string { return "slack" }
func (quietSlack) Start(ctx context.Context, _ core.Handler) error {
	<-ctx.Done()
	return nil
}
func (quietSlack) Limits() core.Limits                                         { return core.Limits{MaxLen: 4000} }
func (quietSlack) Measure(s string) int                                        { return len(s) }
func (quietSlack) Edit(context.Context, core.MessageRef, string) error         { return nil }
func (quietSlack) SendActivity(context.Context, core.MessageRef, string) error { return nil }
func (quietSlack) Send(_ context.Context, to core.Place, _ string) (core.MessageRef, error) {
	return core.MessageRef{Channel: to.Channel, ID: "1"}, nil
}

// BenchmarkLoopMinute is one minute of the loop over 10,000 schedules in
// a bbolt store (about 7 of them due each minute, every one recorded; the
// loop also wakes at each 10 s resync and reads the change marker):
// cpu-ms/min is the process's CPU time per minute of the clock.
func BenchmarkLoopMinute(b *testing.B) {
	st, err := store.Open(filepath.Join(b.TempDir(), "golem.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	clock := clockwork.NewFakeClockAt(t0)
	fill(b, st, 10000, t0, false)
	r := &countRunner{}
	book := schedule.New(schedule.Options{Store: st, Clock: clock, Runner: r, Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { book.Run(ctx); close(done) }()
	wait := func() {
		wctx, stop := context.WithTimeout(context.Background(), time.Minute)
		defer stop()
		if err := clock.BlockUntilContext(wctx, 1); err != nil {
			b.Fatal(err)
		}
	}
	wait()
	b.ResetTimer()
	start := cpu()
	for range b.N {
		for range time.Minute / schedule.DefaultResync { // the loop wakes at each resync, as on the real clock
			clock.Advance(schedule.DefaultResync)
			wait()
		}
	}
	cancel()
	<-done // every run recorded
	b.StopTimer()
	b.ReportMetric(float64((cpu()-start).Microseconds())/1000/float64(b.N), "cpu-ms/min")
	b.ReportMetric(float64(r.runs.Load())/float64(b.N), "runs/min")
}

// BenchmarkInstantToAgentStart: with 10,000 schedules in the store, the
// time from a schedule's instant (the clock reaching it) to its agent's
// process starting, through the real dispatcher and the fake agent CLI.
func BenchmarkInstantToAgentStart(b *testing.B) {
	clock := clockwork.NewFakeClockAt(t0)
	var book *schedule.Book
	bot := bottest.New(b, bottest.Options{Allow: []string{"slack:U1"}, Tune: func(o *core.Options) {
		book = schedule.New(schedule.Options{Store: o.Store, Clock: clock, Logger: o.Logger})
		o.Schedules = book
	}})
	book.Bind(bot.Dispatcher)
	bot.Start(quietSlack{})
	fill(b, bot.Store, 10000, t0, true) // none due while it runs: the loop holds them all, the agent runs one
	key := store.NewKey("slack", "T1", "C-bench", "")
	if err := bot.Store.SaveSchedule(store.Schedule{ID: "due", Key: key, Platform: "slack", Workspace: "T1", Channel: "C-bench",
		User: "U1", Spec: "@every 1m", Prompt: "hi", Created: t0}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { book.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	wctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	var lat []time.Duration
	seen := 0
	b.ResetTimer()
	for range b.N {
		if err := clock.BlockUntilContext(wctx, 1); err != nil {
			b.Fatal(err)
		}
		at := time.Now()
		clock.Advance(time.Minute)
		var inv []enginetest.Invocation
		for deadline := time.Now().Add(30 * time.Second); len(inv) <= seen; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatal("no agent run")
			}
			inv = enginetest.ReadLog(b, bot.AgentLog)
		}
		for _, i := range inv[seen:] {
			if i.Prompt == "hi" {
				lat = append(lat, time.Unix(0, i.Started).Sub(at))
			}
		}
		seen = len(inv)
	}
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) == 0 {
		b.Fatal("no run of the due schedule")
	}
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
}

// BenchmarkEveryWith10000 is /every answered (parsed, counted against
// schedules.max, saved) in a conversation of 19 schedules with 10,000 more
// in the store, on bbolt and on one etcd member: it runs in the
// dispatcher's Handle. Each schedule it adds is deleted again, untimed.
func BenchmarkEveryWith10000(b *testing.B) {
	backends := []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"bbolt", func(b *testing.B) store.Store {
			st, err := store.Open(filepath.Join(b.TempDir(), "golem.db"))
			if err != nil {
				b.Fatal(err)
			}
			return st
		}},
		{"etcd", func(b *testing.B) store.Store {
			st, err := etcdstore.Open(etcdstore.Config{Endpoints: etcdtest.Start(b, 1).Endpoints, Prefix: "golem"})
			if err != nil {
				b.Fatal(err)
			}
			return st
		}},
	}
	here := core.Message{Platform: "slack", Workspace: "T1", Channel: "C-every", User: "U1", ID: "1.0"}
	key := core.KeyFor(here, core.ScopeChannel)
	scheduled := regexp.MustCompile("Scheduled `([0-9a-f]+)`")
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			st := be.open(b)
			defer st.Close()
			fill(b, st, 10000, t0, false)
			for i := range schedule.DefaultMax - 1 {
				if err := st.SaveSchedule(store.Schedule{ID: fmt.Sprint("e", i), Key: key, Platform: "slack", Workspace: "T1", Channel: "C-every",
					User: "U1", Spec: "@hourly", Prompt: "p", Created: t0}); err != nil {
					b.Fatal(err)
				}
			}
			book := schedule.New(schedule.Options{Store: st, Clock: clockwork.NewFakeClockAt(t0), Logger: slog.New(slog.DiscardHandler)})
			for b.Loop() {
				a := book.Command(here, key, "every", `"0 9 * * 1-5" p`)
				id := scheduled.FindStringSubmatch(a)
				if id == nil {
					b.Fatal(a)
				}
				b.StopTimer()
				if err := st.DeleteSchedule(id[1]); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
