package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/store/etcdstore"
)

// The listing is served from a watch-fed mirror: it still shows, at once,
// what another store (another replica) wrote just before, records removed
// behind its back, and fails on a record it cannot read, as a range read
// does.
func TestListingSeesOtherWritesAtOnce(t *testing.T) {
	c := etcdtest.Start(t, 1)
	open := func() *etcdstore.Store {
		s, err := etcdstore.Open(etcdstore.Config{Endpoints: c.Endpoints, Prefix: "mirror"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	list := func(want int) map[store.Key]time.Time {
		t.Helper()
		got, err := b.ListConversations()
		if err != nil {
			t.Fatal(err)
		}
		out := map[store.Key]time.Time{}
		for i, ct := range got {
			if i > 0 && got[i-1].Key.String() >= ct.Key.String() {
				t.Errorf("listing out of key order at %d: %v then %v", i, got[i-1].Key, ct.Key)
			}
			out[ct.Key] = ct.LastUsed
		}
		if len(out) != want {
			t.Fatalf("listed %d conversations, want %d", len(out), want)
		}
		return out
	}
	list(0)
	for i := range 30 {
		k := store.NewKey("slack", "T1", fmt.Sprintf("C%02d", i), "")
		if err := a.SaveConversation(store.Conversation{Key: k, LastUsed: base.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
		if at := list(i + 1)[k]; !at.Equal(base.Add(time.Duration(i) * time.Second)) {
			t.Fatalf("%v listed as used at %v right after a's write", k, at)
		}
	}
	k0 := store.NewKey("slack", "T1", "C00", "")
	later := base.Add(time.Hour)
	if err := a.UpdateConversation(k0, func(c *store.Conversation) bool { c.LastUsed = later; return true }); err != nil {
		t.Fatal(err)
	}
	if at := list(30)[k0]; at.Before(later) {
		t.Errorf("after a's update %v is listed as used at %v, want %v or later", k0, at, later)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := a.Client().Delete(ctx, "mirror/conv/"+k0.String()); err != nil {
		t.Fatal(err)
	}
	if _, ok := list(29)[k0]; ok {
		t.Errorf("%v listed after its record was removed", k0)
	}
	if _, err := a.Client().Put(ctx, "mirror/conv/not a key", "{"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ListConversations(); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("listing with an unreadable record: %v, want ErrCorrupt", err)
	}
	if _, err := a.Client().Delete(ctx, "mirror/conv/not a key"); err != nil {
		t.Fatal(err)
	}
	list(29)
}
