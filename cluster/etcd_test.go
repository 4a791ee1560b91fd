package cluster_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golem-chat/golem/cluster"
	"github.com/golem-chat/golem/internal/clustertest"
	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/internal/nettest"
)

// leader runs Lead for r and records when its leadership starts and ends.
type leader struct {
	leads, ends chan time.Time
	running     atomic.Int32
}

func lead(t *testing.T, r cluster.Replica, role string) *leader {
	l := &leader{leads: make(chan time.Time, 10), ends: make(chan time.Time, 10)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Lead(ctx, role, func(ctx context.Context) {
			l.running.Add(1)
			l.leads <- time.Now()
			<-ctx.Done()
			l.running.Add(-1)
			l.ends <- time.Now()
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

func within(t *testing.T, ch <-chan time.Time, d time.Duration, what string) time.Time {
	t.Helper()
	select {
	case at := <-ch:
		return at
	case <-time.After(d):
		t.Fatalf("%s: not within %v", what, d)
		return time.Time{}
	}
}

// One replica leads a role at a time; when the leader is cut off from
// etcd it stops leading within its grace, before its lease expires, and
// another leads within the TTL (and a little) of the cut.
func TestLeadershipMovesWhenTheLeaderIsCutOff(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	proxy := nettest.NewProxy(t, etcd.Endpoints[0])
	const ttl = 2 * time.Second
	a := clustertest.Join(t, proxy.Addr, "a", ttl)
	la := lead(t, a, "telegram")
	within(t, la.leads, 5*time.Second, "a leads")
	b := clustertest.Join(t, etcd.Endpoints[0], "b", ttl)
	lb := lead(t, b, "telegram")
	select {
	case <-lb.leads:
		t.Fatal("b leads while a does")
	case <-time.After(time.Second):
	}
	if !a.Live() || !a.Leading("telegram") || b.Leading("telegram") {
		t.Fatalf("a live %v leading %v, b leading %v", a.Live(), a.Leading("telegram"), b.Leading("telegram"))
	}

	cut := time.Now()
	proxy.Cut()
	aEnds := within(t, la.ends, ttl+time.Second, "a gives up")
	bLeads := within(t, lb.leads, ttl+5*time.Second, "b leads")
	if !aEnds.Before(bLeads) {
		t.Fatalf("b led at %v, before a gave up at %v", bLeads.Sub(cut), aEnds.Sub(cut))
	}
	if a.Live() {
		t.Fatal("a, cut off, still says it is live")
	}
	t.Logf("a gave up %v after the cut, b led %v after it", aEnds.Sub(cut), bLeads.Sub(cut))

	proxy.Heal() // a joins again and waits its turn
	deadline := time.Now().Add(10 * time.Second)
	for !a.Live() {
		if time.Now().After(deadline) {
			t.Fatal("a did not join again after the network healed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case <-la.leads:
		t.Fatal("a leads again while b does")
	case <-time.After(time.Second):
	}
}

// A replica that closes hands its role over at once, not after its TTL.
func TestCloseHandsOverAtOnce(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	a := clustertest.Join(t, etcd.Endpoints[0], "a", 10*time.Second)
	la := lead(t, a, "discord")
	within(t, la.leads, 5*time.Second, "a leads")
	b := clustertest.Join(t, etcd.Endpoints[0], "b", 10*time.Second)
	lb := lead(t, b, "discord")
	a.Close()
	within(t, lb.leads, 3*time.Second, "b leads after a closed")
}
