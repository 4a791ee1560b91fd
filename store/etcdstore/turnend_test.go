package etcdstore_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/store/etcdstore"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// A turn's end is one transaction, fenced as the conversation's other
// writes: refused whole where another replica owns the conversation, its
// usage and record then kept on their own, since what the turn used counts
// whoever owns the conversation now.
func TestFinishTurnIsFenced(t *testing.T) {
	f := newFenced(t, "fence")
	s, cli, mine, theirs, owner, member := f.s, f.cli, f.mine, f.theirs, f.owner, f.member
	ctx := context.Background()
	if _, err := cli.Put(ctx, member, "", clientv3.WithLease(mine)); err != nil {
		t.Fatal(err)
	}
	key := store.NewKey("rec", "", "C1", "")
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	n := 0
	finish := func(session string) error {
		n++
		return s.FinishTurn(store.TurnEnd{Key: key,
			Session: func(c *store.Conversation) bool { c.SessionID = session; return true },
			Usage:   &store.Usage{Turns: 1}, User: "rec:alice", At: at,
			Record: &store.TurnRecord{ID: session, Key: key, Started: at.Add(time.Duration(n) * time.Second), Outcome: "done"}})
	}
	if _, err := cli.Put(ctx, owner, "me", clientv3.WithLease(mine)); err != nil {
		t.Fatal(err)
	}
	if err := finish("mine"); err != nil {
		t.Fatalf("the owner's turn's end: %v", err)
	}
	if _, err := cli.Put(ctx, owner, "them", clientv3.WithLease(theirs)); err != nil {
		t.Fatal(err)
	}
	if err := finish("late"); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a turn's end where another replica owns the conversation: %v, want ErrFenced", err)
	}
	if got, err := s.Conversation(key); err != nil || got.SessionID != "mine" {
		t.Errorf("stored %+v, %v; want the owner's session, not the late one", got, err)
	}
	if u, err := s.UsageTotals(key, "rec:alice", at); err != nil || u.Conversation.Turns != 2 || u.UserToday.Turns != 2 {
		t.Errorf("usage %+v, %v; want both turns counted", u, err)
	}
	if recs, err := s.RecentTurns(key); err != nil || len(recs) != 2 || recs[0].ID != "late" {
		t.Errorf("turn records %+v, %v; want both, the late one first", recs, err)
	}
}

// A turn's end reads nothing it knows: in one conversation after another
// turn's end, it is one round trip, also once the oldest turn records go;
// and what another replica wrote in between (the record, the totals) is
// neither undone nor counted twice.
func TestFinishTurnReadsNothingKnown(t *testing.T) {
	c := etcdtest.Start(t, 1)
	var calls atomic.Int64
	count := grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if strings.Contains(method, "etcdserverpb.KV/") {
			calls.Add(1)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	})
	s, err := etcdstore.Open(etcdstore.Config{Endpoints: c.Endpoints, Prefix: "known", DialOptions: []grpc.DialOption{count}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := etcdstore.Open(etcdstore.Config{Endpoints: c.Endpoints, Prefix: "known"}) // another replica's
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	key := store.NewKey("rec", "", "C1", "")
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	turn := store.Usage{Turns: 1, CostUSD: 0.25}
	i := 0
	finish := func() int64 {
		t.Helper()
		i++
		before := calls.Load()
		err := s.FinishTurn(store.TurnEnd{Key: key,
			Session: func(c *store.Conversation) bool {
				c.Sessions = store.AddSession(c.Sessions, string(rune('a'+i)))
				return true
			},
			Usage: &turn, User: "rec:alice", At: at,
			Record: &store.TurnRecord{ID: string(rune('a' + i)), Key: key, Started: at.Add(time.Duration(i) * time.Second), Outcome: "done"}})
		if err != nil {
			t.Fatal(err)
		}
		return calls.Load() - before
	}
	finish() // learns the record and the totals
	if trips := finish(); trips != 1 {
		t.Errorf("a turn's end after the last one made %d round trips, want 1", trips)
	}
	if err := other.UpdateConversation(key, func(c *store.Conversation) bool { c.Model = "theirs"; return true }); err != nil {
		t.Fatal(err)
	}
	if err := other.AddUsage(key, "rec:bob", at, turn); err != nil {
		t.Fatal(err)
	}
	finish()
	got, err := s.Conversation(key)
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != "theirs" || len(got.Sessions) != 3 {
		t.Errorf("after another replica's update: %+v; want its model and the 3 sessions", got)
	}
	u, err := s.UsageTotals(key, "rec:alice", at)
	if err != nil {
		t.Fatal(err)
	}
	if u.Conversation.Turns != 4 || u.Today.Turns != 4 || u.UserToday.Turns != 3 || u.Today.CostUSD != 1 {
		t.Errorf("usage %+v; want 4 turns, 3 of them alice's", u)
	}
	if trips := finish(); trips != 1 { // it read what it knows now
		t.Errorf("a turn's end after a read made %d round trips, want 1", trips)
	}
	// Past the records a conversation keeps, the oldest goes in the same
	// transaction.
	for i < store.MaxTurnRecords+3 {
		if trips := finish(); trips != 1 {
			t.Fatalf("turn %d's end made %d round trips, want 1", i, trips)
		}
	}
	recs, err := s.RecentTurns(key)
	if err != nil || len(recs) != store.MaxTurnRecords || recs[0].ID != string(rune('a'+i)) {
		t.Fatalf("after %d turns: %d records (%v), want the last %d, newest first", i, len(recs), err, store.MaxTurnRecords)
	}
	if all, err := s.Client().Get(context.Background(), "known/turnlog/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || all.Count != store.MaxTurnRecords {
		t.Fatalf("%v records stored (%v), want %d", all.Count, err, store.MaxTurnRecords)
	}
	if err := s.UpdateConversation(key, func(c *store.Conversation) bool { c.Engine = "codex"; return true }); err != nil {
		t.Fatal(err)
	}
	if got, _ := other.Conversation(key); got.Engine != "codex" || got.Model != "theirs" || len(got.Sessions) != min(i, store.MaxSessions) {
		t.Errorf("after an update of a known record: %+v", got)
	}
}
