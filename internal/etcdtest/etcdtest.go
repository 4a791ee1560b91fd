// Package etcdtest runs etcd inside a test: one member or a cluster of
// several, on loopback ports, its data in the test's temporary folder and
// never fsynced.
package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// Cluster is a running embedded etcd.
type Cluster struct {
	// Endpoints are the members' client addresses, host:port.
	Endpoints []string
	members   []*embed.Etcd
}

// URL is the store: value that reaches the cluster with prefix.
func (c *Cluster) URL(prefix string) string {
	return "etcd://" + strings.Join(c.Endpoints, ",") + "/" + prefix
}

// Start runs an etcd cluster of n members for the test, stopped when it
// ends, and returns once it has a leader.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	ports := freePorts(t, 2*n)
	var initial []string
	cfgs := make([]*embed.Config, n)
	c := &Cluster{}
	for i := range n {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprint("m", i)
		cfg.Dir = t.TempDir()
		cfg.UnsafeNoFsync = true
		cfg.LogLevel = "error"
		cfg.LogOutputs = []string{"/dev/null"}
		cfg.TickMs, cfg.ElectionMs = 10, 100 // a leader within a second, under load too
		client := url.URL{Scheme: "http", Host: fmt.Sprint("127.0.0.1:", ports[2*i])}
		peer := url.URL{Scheme: "http", Host: fmt.Sprint("127.0.0.1:", ports[2*i+1])}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		initial = append(initial, cfg.Name+"="+peer.String())
		c.Endpoints = append(c.Endpoints, client.Host)
		cfgs[i] = cfg
	}
	// Members of a new cluster wait for each other: start them together.
	var wg sync.WaitGroup
	errs := make([]error, n)
	c.members = make([]*embed.Etcd, n)
	for i, cfg := range cfgs {
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = "golem-test"
		wg.Go(func() { c.members[i], errs[i] = embed.StartEtcd(cfg) })
	}
	wg.Wait()
	t.Cleanup(c.stop)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("etcdtest: start member %d: %v", i, err)
		}
	}
	for i, m := range c.members {
		select {
		case <-m.Server.ReadyNotify():
		case err := <-m.Err():
			t.Fatalf("etcdtest: member %d: %v", i, err)
		case <-time.After(30 * time.Second):
			t.Fatalf("etcdtest: member %d not ready after 30 s", i)
		}
	}
	return c
}

func (c *Cluster) stop() {
	for _, m := range c.members {
		if m != nil {
			m.Close()
		}
	}
}

// freePorts returns n loopback ports free at the time of asking.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	ls := make([]net.Listener, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("etcdtest: free port: %v", err)
		}
		ls[i], ports[i] = l, l.Addr().(*net.TCPAddr).Port
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}
