package etcdstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/golem-chat/golem/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A turn's first record strikes its message's mail in the same fenced
// transaction: the owner's leaves the record and no mail, a write another
// replica's ownership refuses leaves the mail and no record.
func TestBeginTurnStrikesItsMail(t *testing.T) {
	f := newFenced(t, "strike")
	s, cli, mine, theirs, owner := f.s, f.cli, f.mine, f.theirs, f.owner
	ctx := context.Background()
	if _, err := cli.Put(ctx, owner, "me", clientv3.WithLease(mine)); err != nil {
		t.Fatal(err)
	}
	if s.StrikesMail() {
		t.Fatal("a store told of no mailbox says it strikes mail")
	}
	s.SetMailbox(func(_ store.Key, mail string) string { return "strike/cluster/mail/k/" + mail })
	if !s.StrikesMail() {
		t.Fatal("a store told of its mailbox says it strikes no mail")
	}
	key := store.NewKey("rec", "", "C1", "")
	for _, m := range []string{"m1", "m2"} {
		if _, err := cli.Put(ctx, "strike/cluster/mail/k/"+m, "{}"); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(k string) bool {
		resp, err := cli.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		return len(resp.Kvs) > 0
	}

	if err := s.BeginTurn(store.InFlight{ID: "t1", Key: key, Mail: "m1"}); err != nil {
		t.Fatalf("the owner's first record: %v", err)
	}
	if exists("strike/cluster/mail/k/m1") || !exists("strike/turns/t1") {
		t.Fatal("the owner's first record did not strike its mail with it")
	}
	if !exists("strike/cluster/mail/k/m2") {
		t.Fatal("another message's mail was struck")
	}
	if _, err := cli.Put(ctx, owner, "them", clientv3.WithLease(theirs)); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginTurn(store.InFlight{ID: "t2", Key: key, Mail: "m2"}); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a first record where another replica owns the conversation: %v, want ErrFenced", err)
	}
	if !exists("strike/cluster/mail/k/m2") || exists("strike/turns/t2") {
		t.Fatal("a fenced first record struck its mail or was written")
	}
	if turns, err := s.InFlightTurns(); err != nil || len(turns) != 1 || turns[0].Mail != "" {
		t.Fatalf("turns in flight %+v, %v; want t1 alone, its mail not stored", turns, err)
	}
}
