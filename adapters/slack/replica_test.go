package slack

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/slack/slacktest"
	"github.com/golem-chat/golem/cluster"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/clustertest"
	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/internal/nettest"
)

// startReplica runs an adapter of replica r on fake, handing what it gets
// to rec.
func startReplica(t *testing.T, fake *slacktest.Server, r cluster.Replica, rec recorder) {
	t.Helper()
	a, err := New(Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: fake.URL,
		Inbox: core.Inbox{Dir: t.TempDir()}, Replica: r})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx, rec) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
}

// Every replica holds a Socket Mode connection while it is in the cluster,
// and Slack spreads the events over them; a replica cut off from etcd
// closes its own, so that every event goes to a replica that can keep
// it, and opens it again once it is back.
func TestReplicaOutOfTheClusterClosesItsSocket(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	proxy := nettest.NewProxy(t, etcd.Endpoints[0])
	ttl := 2 * time.Second
	a := clustertest.Join(t, proxy.Addr, "a", ttl)
	b := clustertest.Join(t, etcd.Endpoints[0], "b", ttl)
	fake := slacktest.New(slacktest.Options{AckTimeout: time.Second})
	defer fake.Close()
	recA, recB := make(recorder, 100), make(recorder, 100)
	startReplica(t, fake, a, recA)
	startReplica(t, fake, b, recB)
	if !fake.Wait(10*time.Second, func() bool { return fake.Open() == 2 }) {
		t.Fatalf("%d sockets open, want one per replica", fake.Open())
	}
	for i := range 2 {
		deliver(t, fake, slacktest.Event{User: "U1", Channel: "C1", Text: fmt.Sprintf("%s before %d", mention, i)})
	}
	recA.next(t)
	recB.next(t)

	proxy.Cut()
	cut := time.Now()
	if !fake.Wait(10*time.Second, func() bool { return fake.Open() == 1 }) {
		t.Fatal("the replica cut off from etcd kept its socket open")
	}
	t.Logf("the cut-off replica closed its socket %v after the cut", time.Since(cut).Round(10*time.Millisecond))
	for i := range 4 {
		deliver(t, fake, slacktest.Event{User: "U1", Channel: "C1", Text: fmt.Sprintf("%s during %d", mention, i)})
		if m := recB.next(t); m.Text != fmt.Sprintf("during %d", i) {
			t.Fatalf("replica b got %q", m.Text)
		}
	}
	select {
	case m := <-recA:
		t.Fatalf("the cut-off replica got %q", m.Text)
	default:
	}

	proxy.Heal()
	if !fake.Wait(20*time.Second, func() bool { return fake.Open() == 2 }) {
		t.Fatal("the replica back in the cluster did not connect again")
	}
}
