package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/store/etcdstore"
	"github.com/golem-chat/golem/store/storetest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestConformance runs the store suite against one etcd member, each test
// under a prefix of its own.
func TestConformance(t *testing.T) {
	c := etcdtest.Start(t, 1)
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) storetest.Backend { return backend(t, c, fmt.Sprint("test", n.Add(1))) })
}

// backend is the store under prefix in c, for the conformance suite, its
// raw records written and read by a client of its own (the layout is the
// package doc's).
func backend(t *testing.T, c *etcdtest.Cluster, prefix string) storetest.Backend {
	cli := client(t, c)
	ctx := context.Background()
	entry := func(key store.Key, id string) string {
		return prefix + "/schedule_keys/" + url.PathEscape(key.String()) + "/" + id
	}
	return storetest.Backend{
		Open: func() (store.Store, error) {
			return etcdstore.Open(etcdstore.Config{Endpoints: c.Endpoints, Prefix: prefix})
		},
		PutScheduleRecord: func(id string, raw []byte) error {
			_, err := cli.Put(ctx, prefix+"/schedules/"+id, string(raw))
			return err
		},
		ScheduleIndexEntry: func(key store.Key, id string) ([]byte, bool, error) {
			resp, err := cli.Get(ctx, entry(key, id))
			if err != nil || len(resp.Kvs) == 0 {
				return nil, false, err
			}
			return resp.Kvs[0].Value, true, nil
		},
		PutScheduleIndexEntry: func(key store.Key, id string, value []byte) error {
			_, err := cli.Put(ctx, entry(key, id), string(value))
			return err
		},
	}
}

// TestConformanceThreeMembers runs the suite against a cluster of three,
// where every write waits for a quorum.
func TestConformanceThreeMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-member cluster")
	}
	c := etcdtest.Start(t, 3)
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) storetest.Backend { return backend(t, c, fmt.Sprint("test", n.Add(1))) })
}

func TestParseURL(t *testing.T) {
	tests := []struct {
		raw       string
		endpoints []string
		prefix    string
		secure    bool
		bad       bool
	}{
		{raw: "etcd://10.0.0.1:2379,10.0.0.2:2379/golem", endpoints: []string{"10.0.0.1:2379", "10.0.0.2:2379"}, prefix: "golem"},
		{raw: "etcds://etcd.internal:2379/team/golem/", endpoints: []string{"etcd.internal:2379"}, prefix: "team/golem", secure: true},
		{raw: "etcd://127.0.0.1:2379", endpoints: []string{"127.0.0.1:2379"}, prefix: "golem"},
		{raw: "etcd://127.0.0.1/golem", bad: true},
		{raw: "etcd://127.0.0.1:x/golem", bad: true},
		{raw: "etcd://a:1,,b:2/golem", bad: true},
		{raw: "etcd://u:p@127.0.0.1:2379/golem", bad: true},
		{raw: "etcd://127.0.0.1:2379/golem?x=1", bad: true},
		{raw: "http://127.0.0.1:2379/golem", bad: true},
	}
	for _, tt := range tests {
		cfg, secure, err := etcdstore.ParseURL(tt.raw)
		if tt.bad {
			if err == nil {
				t.Errorf("ParseURL(%q) = %+v, want an error", tt.raw, cfg)
			}
			continue
		}
		if err != nil || secure != tt.secure || cfg.Prefix != tt.prefix || !slices.Equal(cfg.Endpoints, tt.endpoints) {
			t.Errorf("ParseURL(%q) = %+v, %t, %v; want %v %q %t", tt.raw, cfg, secure, err, tt.endpoints, tt.prefix, tt.secure)
		}
	}
}

// TestOpenChecksSchema: a prefix holding another golem's schema, or keys
// that are not golem's, is refused with an error saying so; a sibling
// prefix does not count.
func TestOpenChecksSchema(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cli := client(t, c)
	ctx := context.Background()
	for k, v := range map[string]string{
		"newer/meta/schema": "99", "garbage/meta/schema": "one", "other/config": "x", "sibling2/x": "y",
	} {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		prefix string
		want   error // nil: opens
		text   string
	}{
		{"newer", store.ErrSchemaTooNew, "schema version 99, this golem knows up to 2"},
		{"garbage", store.ErrCorrupt, `unreadable schema version "one"`},
		{"other", store.ErrCorrupt, `no schema marker, but a key "other/config"`},
		{"sibling", nil, ""},
	}
	for _, tt := range tests {
		s, err := etcdstore.Open(etcdstore.Config{Endpoints: c.Endpoints, Prefix: tt.prefix})
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tt.prefix, err)
				continue
			}
			s.Close()
			continue
		}
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) || !strings.HasPrefix(err.Error(), "store: ") {
			t.Errorf("%s: %v, want %v saying %q", tt.prefix, err, tt.want, tt.text)
		}
	}
	// What Open wrote: the marker, once, read by every later Open.
	resp, err := cli.Get(ctx, "sibling/meta/schema")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "2" {
		t.Fatalf("schema marker %+v, %v", resp, err)
	}
}

// TestOpenMigratesSchedulesIndex: a store of schema version 1, whose
// schedules have no index by conversation, is indexed and marked version
// 2 by Open, so that a conversation's schedules are found and counted.
func TestOpenMigratesSchedulesIndex(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cli := client(t, c)
	ctx := context.Background()
	k := store.NewKey("slack", "T", "C/1", "")
	raw := `{"id":"a1b2","key":"slack:T:C/1","platform":"slack","channel":"C/1","user":"U","spec":"@hourly","prompt":"p","created":"2026-03-01T09:00:00Z"}`
	for key, v := range map[string]string{"old/meta/schema": "1", "old/schedules/a1b2": raw} {
		if _, err := cli.Put(ctx, key, v); err != nil {
			t.Fatal(err)
		}
	}
	s, err := etcdstore.Open(etcdstore.Config{Endpoints: c.Endpoints, Prefix: "old"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.ConversationSchedules(k)
	if err != nil || len(got) != 1 || got[0].ID != "a1b2" {
		t.Fatalf("the conversation's schedules after the migration: %+v, %v", got, err)
	}
	if err := s.AddSchedule(store.Schedule{ID: "c3d4", Key: k, Prompt: "p"}, 1); !errors.Is(err, store.ErrScheduleLimit) {
		t.Errorf("a second schedule with max 1: %v, want ErrScheduleLimit", err)
	}
	resp, err := cli.Get(ctx, "old/meta/schema")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "2" {
		t.Fatalf("schema marker after the migration %+v, %v", resp, err)
	}
}

// TestOpenUnreachable: no etcd at the endpoints fails Open within its
// start timeout, naming the store and the endpoints.
func TestOpenUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	start := time.Now()
	_, err = etcdstore.Open(etcdstore.Config{Endpoints: []string{addr}, Prefix: "golem", StartTimeout: time.Second})
	if err == nil {
		t.Fatal("opened a store with no etcd")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Open took %v with a start timeout of 1 s", took)
	}
	if !strings.HasPrefix(err.Error(), "store: etcd "+addr) || !strings.Contains(err.Error(), "no answer within 1s") {
		t.Errorf("error %q does not name the store, the endpoint and the wait", err)
	}
}

// TestTwoStoresShareOnePrefix is two replicas' view of one prefix: an
// event id is first for exactly one of them, and their updates of one
// conversation never undo each other's.
func TestTwoStoresShareOnePrefix(t *testing.T) {
	c := etcdtest.Start(t, 1)
	var stores [2]store.Store
	for i := range stores {
		s, err := etcdstore.Open(etcdstore.Config{Endpoints: c.Endpoints, Prefix: "shared"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	key := store.NewKey("slack", "T", "C", "")
	var firsts atomic.Int64
	var wg sync.WaitGroup
	for i, s := range stores {
		for w := range 4 {
			wg.Go(func() {
				for e := range 20 {
					first, err := s.MarkSeen(fmt.Sprint("slack:Ev", e), time.Hour)
					if err != nil {
						t.Error(err)
						return
					}
					if first {
						firsts.Add(1)
					}
				}
				field := fmt.Sprint(i, w)
				if err := s.UpdateConversation(key, func(c *store.Conversation) bool {
					c.SessionID += "," + field
					return true
				}); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	if n := firsts.Load(); n != 20 {
		t.Errorf("20 event ids were first %d times across two stores, want 20", n)
	}
	conv, err := stores[1].Conversation(key)
	if err != nil {
		t.Fatal(err)
	}
	if parts := strings.Split(strings.TrimPrefix(conv.SessionID, ","), ","); len(parts) != 8 {
		t.Errorf("8 updates left %q: some undid others", conv.SessionID)
	}
}

// TestSeenIDsAreLeased: seen ids are kept under a lease that outlives
// their ttl, so etcd drops them; one lease serves many ids.
func TestSeenIDsAreLeased(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s, err := etcdstore.Open(etcdstore.Config{Endpoints: c.Endpoints, Prefix: "lease"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for e := range 5 {
		if _, err := s.MarkSeen(fmt.Sprint("e", e), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	cli := client(t, c)
	resp, err := cli.Get(context.Background(), "lease/seen/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 5 {
		t.Fatalf("seen keys %+v, %v", resp, err)
	}
	lease := resp.Kvs[0].Lease
	for _, kv := range resp.Kvs {
		if kv.Lease == 0 || kv.Lease != lease {
			t.Fatalf("seen id %s has lease %x, want one lease for all (%x)", kv.Key, kv.Lease, lease)
		}
	}
	ttl, err := cli.TimeToLive(context.Background(), clientv3.LeaseID(lease))
	if err != nil {
		t.Fatal(err)
	}
	if left := time.Duration(ttl.TTL) * time.Second; left < time.Hour || left > 2*time.Hour {
		t.Errorf("the lease ends in %v, want after the ids' hour and not long after", left)
	}
}

func client(t *testing.T, c *etcdtest.Cluster) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestTLS reaches a member that requires TLS and a client certificate:
// with TLSConfig's CA, certificate and key it opens; without the client
// certificate, or without TLS, it does not.
func TestTLS(t *testing.T) {
	c := etcdtest.StartTLS(t)
	cfg, secure, err := etcdstore.ParseURL(c.URL("tls"))
	if err != nil || !secure {
		t.Fatalf("ParseURL(%s) = %+v, %t, %v", c.URL("tls"), cfg, secure, err)
	}
	cfg.StartTimeout = time.Second
	if cfg.TLS, err = etcdstore.TLSConfig(c.CAFile, c.CertFile, c.KeyFile); err != nil {
		t.Fatal(err)
	}
	s, err := etcdstore.Open(cfg)
	if err != nil {
		t.Fatalf("open over TLS: %v", err)
	}
	if err := s.Save("k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	noCert := cfg
	if noCert.TLS, err = etcdstore.TLSConfig(c.CAFile, "", ""); err != nil {
		t.Fatal(err)
	}
	plain := cfg
	plain.TLS = nil
	for name, cfg := range map[string]etcdstore.Config{"without a client certificate": noCert, "without TLS": plain} {
		if s, err := etcdstore.Open(cfg); err == nil {
			s.Close()
			t.Errorf("opened %s", name)
		}
	}
	if _, err := etcdstore.TLSConfig(c.CertFile+".missing", "", ""); err == nil || !strings.HasPrefix(err.Error(), "store_tls.ca: ") {
		t.Errorf("a missing CA file: %v", err)
	}
	if _, err := etcdstore.TLSConfig(c.CAFile, c.CertFile, c.CAFile); err == nil || !strings.HasPrefix(err.Error(), "store_tls.cert, store_tls.key: ") {
		t.Errorf("a key that is not the certificate's: %v", err)
	}
}

// TestQuorumLoss: with two of three members down a call fails once its
// timeout has passed, instead of hanging, and the store works again once
// a quorum is back, on the same connection.
func TestQuorumLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-member cluster")
	}
	c := etcdtest.Start(t, 3)
	s, err := etcdstore.Open(etcdstore.Config{Endpoints: c.Endpoints, Prefix: "quorum", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Save("k", []byte("before")); err != nil {
		t.Fatal(err)
	}
	c.Stop(1)
	c.Stop(2)
	start := time.Now()
	err = s.Save("k", []byte("lost"))
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("a save without a quorum took %v; its timeout is 1 s", took)
	}
	if err == nil || !strings.HasPrefix(err.Error(), "store: save k: ") {
		t.Fatalf("a save without a quorum: %v, want a store error", err)
	}
	if _, err := s.Load("k"); err == nil {
		t.Error("a read without a quorum answered (reads are linearizable)")
	}
	c.Restart(t, 1)
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := s.Save("k", []byte("after"))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store still fails 20 s after the quorum came back: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // the client reconnects on its own
	}
	if v, err := s.Load("k"); err != nil || string(v) != "after" {
		t.Errorf("after the quorum came back: %q, %v", v, err)
	}
}
