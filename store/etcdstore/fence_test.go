package etcdstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/golem-chat/golem/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A fenced write to a conversation commits while this replica's lease owns
// it, or while nobody owns it and this replica is still a member; once its
// lease is gone (a replica cut off long enough, whose late writes arrive
// after it healed), it is refused even where nobody owns the conversation.
func TestFencedWrites(t *testing.T) {
	f := newFenced(t, "fence")
	s, cli, mine, theirs, owner, member := f.s, f.cli, f.mine, f.theirs, f.owner, f.member
	ctx := context.Background()
	if _, err := cli.Put(ctx, member, "", clientv3.WithLease(mine)); err != nil {
		t.Fatal(err)
	}
	key := store.NewKey("rec", "", "C1", "")
	save := func(model string) error { return s.SaveConversation(store.Conversation{Key: key, Model: model}) }

	if err := save("nobody owns it"); err != nil {
		t.Fatalf("a member's write where nobody owns the conversation: %v", err)
	}
	if _, err := cli.Put(ctx, owner, "them", clientv3.WithLease(theirs)); err != nil {
		t.Fatal(err)
	}
	if err := save("theirs"); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a write where another replica owns it: %v, want ErrFenced", err)
	}
	if _, err := cli.Put(ctx, owner, "me", clientv3.WithLease(mine)); err != nil {
		t.Fatal(err)
	}
	if err := save("mine"); err != nil {
		t.Fatalf("the owner's write: %v", err)
	}
	if err := s.UpdateConversation(key, func(c *store.Conversation) bool { c.Model = "updated"; return true }); err != nil {
		t.Fatalf("the owner's update: %v", err)
	}
	if _, err := cli.Revoke(ctx, mine); err != nil { // its lease expired: owner and member keys go with it
		t.Fatal(err)
	}
	if err := save("late"); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a write after this replica's lease ended, nobody owning it: %v, want ErrFenced", err)
	}
	if got, err := s.Conversation(key); err != nil || got.Model != "updated" {
		t.Fatalf("stored %+v, %v; want the owner's last write", got, err)
	}
}
