package schedule_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/schedule"
	"github.com/golem-chat/golem/store/etcdstore"
	"github.com/jonboulle/clockwork"
)

// TestReplicasOverEtcd: two replicas' Books share an etcd store. A
// schedule set through one reaches the other's loop at its next resync,
// and while both loops run (a leadership moving) each instant fires once.
func TestReplicasOverEtcd(t *testing.T) {
	c := etcdtest.Start(t, 1)
	clock := clockwork.NewFakeClockAt(t0)
	r := newRunner()
	var books []*schedule.Book
	for range 2 {
		st, err := etcdstore.Open(etcdstore.Config{Endpoints: c.Endpoints, Prefix: "golem"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		books = append(books, schedule.New(schedule.Options{Store: st, Clock: clock, Runner: r, Logger: slog.New(slog.DiscardHandler)}))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { books[1].Run(ctx); close(done) }() // the leader, at first
	defer cancel()
	wait := func(n int) {
		t.Helper()
		wctx, stop := context.WithTimeout(context.Background(), 20*time.Second)
		defer stop()
		if err := clock.BlockUntilContext(wctx, n); err != nil {
			t.Fatalf("%d loops did not sleep", n)
		}
	}
	wait(1)
	ans := books[0].Command(msg, core.KeyFor(msg, core.ScopeChannel), "every", `"@every 1m" p`) // on the other replica
	if !strings.Contains(ans, "Scheduled") {
		t.Fatal(ans)
	}
	clock.Advance(schedule.DefaultResync) // 09:09:10: the leader rereads the schedules
	wait(1)
	clock.Advance(time.Minute - schedule.DefaultResync) // 09:00
	r.next(t)
	wait(1)

	ctx2, cancel2 := context.WithCancel(context.Background())
	done2 := make(chan struct{})
	go func() { books[0].Run(ctx2); close(done2) }() // the leadership moves: both run a while
	defer cancel2()
	wait(2)
	for range 3 {
		clock.Advance(time.Minute)
		r.next(t)
		wait(2)
	}
	cancel2()
	<-done2
	cancel()
	<-done // every firing under way has ended
	r.none(t)
}
