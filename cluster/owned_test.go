package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// host is a core.Host that records what it is given; idle, when set, is
// called by Idle (under the key's lock) before it answers true.
type host struct {
	mu        sync.Mutex
	delivered []string
	got       chan struct{}
	idle      func()
	idles     chan struct{} // a token per call of Idle, while there is room
	act       func() (core.ActionResult, bool)
}

func newHost() *host { return &host{got: make(chan struct{}, 16), idles: make(chan struct{}, 16)} }

func (h *host) TakeOver(store.Key) {}
func (h *host) Deliver(m core.Message) {
	h.mu.Lock()
	h.delivered = append(h.delivered, m.Text)
	h.mu.Unlock()
	h.got <- struct{}{}
}
func (h *host) Idle(store.Key) bool {
	h.mu.Lock()
	f := h.idle
	h.idle = nil
	h.mu.Unlock()
	if f != nil {
		f()
	}
	select {
	case h.idles <- struct{}{}:
	default:
	}
	return true
}
func (h *host) Act(context.Context, core.Action) (core.ActionResult, bool) {
	h.mu.Lock()
	f := h.act
	h.mu.Unlock()
	if f != nil {
		return f()
	}
	return core.ActionResult{}, false
}
func (h *host) GiveUp() {}

func joinTest(t *testing.T, endpoint, name string, h core.Host) *Conversations {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := JoinEtcd(ctx, EtcdOptions{Client: cli, Prefix: "golem", Name: name, TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := NewConversations(r, nil)
	c.Bind(h)
	t.Cleanup(func() { c.Close(); r.Close(); cli.Close() })
	return c
}

// waitLocked waits until a goroutine waits for a mutex inside fn (a
// function of this package, as its stack names it).
func waitLocked(t *testing.T, fn string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	buf := make([]byte, 1<<20)
	for time.Now().Before(deadline) {
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "sync.(*Mutex).Lock") && strings.Contains(g, "cluster.(*Conversations)."+fn+"(") {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no goroutine came to wait for a lock in %s", fn)
}

// A message that claims a conversation while this replica lets go of it
// keeps the conversation's record here: mail another replica puts for it
// afterwards is delivered, not left in the mailbox of a conversation that
// this replica owns without knowing.
func TestClaimWhileLettingGoKeepsTheRecord(t *testing.T) {
	e := etcdtest.Start(t, 1)
	ha, hb := newHost(), newHost()
	a, b := joinTest(t, e.Endpoints[0], "a", ha), joinTest(t, e.Endpoints[0], "b", hb)
	key := store.Key{Platform: "rec", Channel: "C1"}
	m := func(text string) core.Message {
		return core.Message{Platform: "rec", Channel: "C1", ID: text, User: "alice", Text: text}
	}
	var enqueued []string
	enqueue := func(m core.Message) { enqueued = append(enqueued, m.Text); a.Taken(key, m) } // its turn begins
	if err := a.Admit(context.Background(), key, m("1"), enqueue); err != nil {
		t.Fatal(err)
	}

	// a lets go of the conversation; as it checks that it is idle, under
	// the key's lock, the next message comes to a and waits for the lock.
	second := make(chan error, 1)
	ha.mu.Lock()
	ha.idle = func() {
		go func() { second <- a.Admit(context.Background(), key, m("2"), enqueue) }()
		waitLocked(t, "Admit")
	}
	ha.mu.Unlock()
	a.Release(key)
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if len(enqueued) != 2 {
		t.Fatalf("a ran %q, want both messages", enqueued)
	}
	if owner := a.Owner(key); owner != "a" {
		t.Fatalf("owner %q after the second message, want a", owner)
	}
	if n := a.Owned(); n != 1 {
		t.Errorf("a says it owns %d conversations, want 1", n)
	}

	// A third message, received by b, goes to the mailbox of a's
	// conversation; a must run it.
	if err := b.Admit(context.Background(), key, m("3"), func(core.Message) { t.Error("b ran a message of a's conversation") }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ha.got:
	case <-time.After(10 * time.Second):
		t.Fatalf("the message b received was never delivered to a, its conversation's owner (a delivered %q)", ha.delivered)
	}
}

// A Release that comes after Close (a retry's timer, a turn's last exit)
// starts nothing: its goroutine would race Close's Wait (an Add
// concurrent with Wait, which -race reports) and use a closed client.
func TestReleaseAfterClose(t *testing.T) {
	e := etcdtest.Start(t, 1)
	h := newHost()
	a := joinTest(t, e.Endpoints[0], "a", h)
	key := store.Key{Platform: "rec", Channel: "C1"}
	taken := func(m core.Message) { a.Taken(key, m) }
	if err := a.Admit(context.Background(), key, core.Message{Platform: "rec", Channel: "C1", ID: "1", User: "alice", Text: "1"}, taken); err != nil {
		t.Fatal(err)
	}
	a.Close()
	h.mu.Lock()
	h.idle = func() { t.Error("Release asked whether a conversation is idle after Close") }
	h.mu.Unlock()
	a.Release(key)
	a.done.Wait()
}

// Mail delivered to core and never taken (core shutting down drops what
// comes, for the next owner) is not struck as the conversation is let go
// of: it stays, and the replica that takes the conversation over runs it.
func TestMailNotTakenGoesToTheNextOwner(t *testing.T) {
	e := etcdtest.Start(t, 1)
	ha, hb := newHost(), newHost()
	a, _ := joinTest(t, e.Endpoints[0], "a", ha), joinTest(t, e.Endpoints[0], "b", hb)
	key := store.Key{Platform: "rec", Channel: "C1"}
	if err := a.Admit(context.Background(), key, core.Message{Platform: "rec", Channel: "C1", ID: "1", User: "alice", Text: "dropped"}, func(core.Message) {}); err != nil {
		t.Fatal(err)
	}
	a.Release(key)
	for range 2 { // the second comes once the first Release is over
		select {
		case <-ha.idles:
		case <-time.After(10 * time.Second):
			t.Fatal("Release never asked whether the conversation is idle")
		}
	}
	a.Close()
	a.r.Close() // revokes the lease: b takes the conversation over
	select {
	case <-hb.got:
		hb.mu.Lock()
		defer hb.mu.Unlock()
		if hb.delivered[0] != "dropped" {
			t.Fatalf("b ran %q", hb.delivered)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the message a's core never took was not run by b, the next owner")
	}
}

// A claim whose transaction etcd committed but whose answer was lost (a
// timeout) leaves the conversation owned on this replica's lease with no
// record of it here: the sweep takes it back and runs its mail, rather
// than leaving the mailbox stuck for as long as the replica lives.
func TestClaimWithoutItsAnswerIsTakenBack(t *testing.T) {
	e := etcdtest.Start(t, 1)
	h := newHost()
	a := joinTest(t, e.Endpoints[0], "a", h)
	key := store.Key{Platform: "rec", Channel: "C1"}
	raw, err := json.Marshal(core.SetMail(core.Message{Platform: "rec", Channel: "C1", ID: "1", User: "alice", Text: "waiting"}, "m1"))
	if err != nil {
		t.Fatal(err)
	}
	// What Admit's claim writes, as committed by etcd.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := a.cli.Txn(ctx).Then(
		clientv3.OpPut(a.ownerKey(key), "a", clientv3.WithLease(a.r.Lease())), clientv3.OpPut(a.dirtyKey(key), "a"),
		clientv3.OpPut(a.mailDir(key)+"m1", string(raw))).Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.got:
		h.mu.Lock()
		ran := h.delivered[0]
		h.mu.Unlock() // not held past here: a Release asks h (Idle) under the key's lock
		if ran != "waiting" {
			t.Fatalf("a ran %q", ran)
		}
	case <-time.After(3 * a.r.TTL()):
		t.Fatal("the mail of a conversation owned on a's lease was never run")
	}
	if n := a.Owned(); n != 1 {
		t.Errorf("a says it owns %d conversations, want 1", n)
	}
}

// A forwarded click answered after its sender stopped waiting leaves no
// answer behind in etcd: the answer is written only while the click is.
func TestLateAnswerOfAClickLeavesNothing(t *testing.T) {
	e := etcdtest.Start(t, 1)
	ha, hb := newHost(), newHost()
	_, b := joinTest(t, e.Endpoints[0], "a", ha), joinTest(t, e.Endpoints[0], "b", hb)
	asked, answer := make(chan struct{}), make(chan struct{})
	ha.mu.Lock()
	ha.act = func() (core.ActionResult, bool) {
		close(asked)
		<-answer
		return core.ActionResult{Settled: "approved"}, true
	}
	ha.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-asked; cancel() }() // the clicker gives up as a's turn answers
	if _, ok := b.Forward(ctx, core.Action{Platform: "rec", Channel: "C1", User: "alice", Data: "golem:approve:r1"}); ok {
		t.Fatal("Forward answered although its sender gave up")
	}
	close(answer)
	time.Sleep(500 * time.Millisecond) // a writes its answer, or not (a's Close would cancel the write)
	get, cerr := context.WithTimeout(context.Background(), 5*time.Second)
	defer cerr()
	resp, err := b.cli.Get(get, b.prefix+"answer/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 {
		t.Fatalf("%d answers of clicks left in etcd", resp.Count)
	}
}

// A replica keeps no record of the conversations it only passes messages
// on to: one per conversation it ever saw would grow without bound, and
// a record makes the sweep take it for one it knows.
func TestNoRecordOfConversationsOwnedElsewhere(t *testing.T) {
	e := etcdtest.Start(t, 1)
	a, b := joinTest(t, e.Endpoints[0], "a", newHost()), joinTest(t, e.Endpoints[0], "b", newHost())
	for i := range 3 {
		key := store.Key{Platform: "rec", Channel: fmt.Sprintf("C%d", i)}
		m := core.Message{Platform: "rec", Channel: key.Channel, ID: "1", User: "alice", Text: "hi"}
		if err := a.Admit(context.Background(), key, m, func(core.Message) {}); err != nil {
			t.Fatal(err)
		}
		if err := b.Admit(context.Background(), key, m, func(core.Message) { t.Error("b ran a message of a's conversation") }); err != nil {
			t.Fatal(err)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.keys) != 0 {
		t.Fatalf("b keeps %d records of conversations a owns", len(b.keys))
	}
}
