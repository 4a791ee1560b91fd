// Package clustertest makes golem replicas for tests: each an etcd client
// of its own, so that a test can cut one replica off from etcd (through
// nettest.Proxy) while the others go on.
package clustertest

import (
	"context"
	"testing"
	"time"

	"github.com/golem-chat/golem/cluster"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Client is an etcd client of endpoint (host:port) for the test, closed
// when it ends. It notices a silent connection within about 2 s.
func Client(t testing.TB, endpoint string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialKeepAliveTime: time.Second, DialKeepAliveTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// Join makes a replica named name, with replica_ttl ttl, over its own
// client of endpoint (give a proxy's address to cut it off later). It
// closes when the test ends.
func Join(t testing.TB, endpoint, name string, ttl time.Duration) *cluster.Etcd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := cluster.JoinEtcd(ctx, cluster.EtcdOptions{Client: Client(t, endpoint), Prefix: "golem", Name: name, TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// WaitLeading waits until r leads role, or fails the test after d.
func WaitLeading(t testing.TB, r cluster.Replica, role string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !r.Leading(role) {
		if time.Now().After(deadline) {
			t.Fatalf("%s does not lead %s after %v", r.Name(), role, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
