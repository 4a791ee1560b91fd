package cluster

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/store/etcdstore"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// A replica letting go of a conversation whose answer was lost (etcd
// deleted the owner key; the replica, not knowing, keeps its record) no
// longer vouches for the record its claim read: another replica may own
// and write the conversation from then on, and the next read here is
// etcd's.
func TestALostLetGoKeepsNoPrimedRecord(t *testing.T) {
	e := etcdtest.Start(t, 1)
	var lose atomic.Bool
	lost := make(chan struct{}, 1)
	loseLetGo := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if r, ok := req.(*pb.TxnRequest); ok && err == nil && deletesOwner(r) && reply.(*pb.TxnResponse).Succeeded && lose.CompareAndSwap(true, false) {
			lost <- struct{}{}
			return context.DeadlineExceeded
		}
		return err
	}
	st, err := etcdstore.Open(etcdstore.Config{Endpoints: e.Endpoints, Prefix: "golem", DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(loseLetGo)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() }) // after the replica's, registered below
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := JoinEtcd(ctx, EtcdOptions{Client: st.Client(), Prefix: st.Prefix(), Name: "a", TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := NewConversations(r, nil)
	c.AttachStore(st)
	c.Bind(newHost())
	t.Cleanup(func() { c.Close(); r.Close() })

	key := store.Key{Platform: "rec", Channel: "C1"}
	if err := st.SaveConversation(store.Conversation{Key: key, SessionID: "mine"}); err != nil {
		t.Fatal(err)
	}
	// The claim reads the record; nothing here reads it after.
	var taken core.Message
	if err := c.Admit(ctx, key, core.Message{Platform: "rec", Channel: "C1", ID: "1", User: "alice", Text: "hi"}, func(m core.Message) { taken = m }); err != nil {
		t.Fatal(err)
	}
	c.Taken(key, taken)
	lose.Store(true)
	c.Release(key)
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("the conversation was never let go of")
	}
	// Owned by none now: another replica (a member) claims and writes it.
	other := clientv3.NewKV(st.Client())
	if resp, err := other.Get(ctx, c.ownerKey(key)); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("the owner key after the let-go: %v, %v", resp, err)
	}
	if _, err := other.Put(ctx, st.Prefix()+"/conv/"+key.String(), `{"s":"theirs"}`); err != nil {
		t.Fatal(err)
	}
	got, err := st.Conversation(key)
	if err != nil {
		t.Fatal(err)
	}
	if got.SessionID != "theirs" {
		t.Errorf("read after a let-go whose answer was lost: session %q, want theirs (etcd's)", got.SessionID)
	}
}

// deletesOwner reports whether r deletes a conversation's owner key (a
// let-go).
func deletesOwner(r *pb.TxnRequest) bool {
	for _, op := range r.Success {
		if d := op.GetRequestDeleteRange(); d != nil && strings.Contains(string(d.Key), "/owner/") {
			return true
		}
	}
	return false
}
