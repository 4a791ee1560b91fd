package etcdstore_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/store/etcdstore"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// A record a claim read is the next read's, which makes no round trip;
// once only, and never when this store wrote the record after the claim
// read it, before or after Prime, or when the conversation was let go of.
func TestPrimedRecordSavesTheRead(t *testing.T) {
	c := etcdtest.Start(t, 1)
	var ranges atomic.Int64
	count := grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if strings.HasSuffix(method, "/Range") {
			ranges.Add(1)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	})
	s, err := etcdstore.Open(etcdstore.Config{Endpoints: c.Endpoints, Prefix: "primed", DialOptions: []grpc.DialOption{count}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	key := store.NewKey("slack", "T1", "C1", "")
	other := clientv3.NewKV(s.Client()) // writes as another replica's store would, unseen by s
	claim := func() {                   // the claim's transaction, as package cluster makes it
		t.Helper()
		resp, err := s.Client().Txn(ctx).Then(s.ConversationOp(key)).Commit()
		if err != nil {
			t.Fatal(err)
		}
		s.Prime(key, resp.Header.Revision, resp.Responses[0].GetResponseRange().Kvs)
	}
	read := func() (store.Conversation, int64) {
		t.Helper()
		before := ranges.Load()
		got, err := s.Conversation(key)
		if err != nil {
			t.Fatal(err)
		}
		return got, ranges.Load() - before
	}

	claim() // no record yet
	if got, trips := read(); got.SessionID != "" || trips != 0 {
		t.Fatalf("primed absent record: %+v after %d reads, want none after 0", got, trips)
	}
	if err := s.SaveConversation(store.Conversation{Key: key, SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if got, trips := read(); got.SessionID != "s1" || trips != 1 {
		t.Fatalf("read with nothing primed: %+v after %d reads", got, trips)
	}

	claim()
	if got, trips := read(); got.SessionID != "s1" || trips != 0 {
		t.Fatalf("primed record: %+v after %d reads, want s1 after 0", got, trips)
	}
	if _, trips := read(); trips != 1 {
		t.Fatalf("a primed record was read %d times", 2-trips)
	}

	claim()
	if err := s.SaveConversation(store.Conversation{Key: key, SessionID: "s2"}); err != nil {
		t.Fatal(err)
	}
	if got, trips := read(); got.SessionID != "s2" || trips != 1 {
		t.Fatalf("written after the claim: %+v after %d reads, want s2 read afresh", got, trips)
	}

	// A write the claim did not see, whose answer came before the claim's.
	old, err := s.Client().Txn(ctx).Then(s.ConversationOp(key)).Commit()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateConversation(key, func(c *store.Conversation) bool { c.SessionID = "s3"; return true }); err != nil {
		t.Fatal(err)
	}
	s.Prime(key, old.Header.Revision, old.Responses[0].GetResponseRange().Kvs)
	if got, trips := read(); got.SessionID != "s3" || trips != 1 {
		t.Fatalf("primed before this store's last write: %+v after %d reads, want s3 read afresh", got, trips)
	}

	claim()
	s.Unprime(key) // let go of: another replica may own and write it now
	if _, err := other.Put(ctx, "primed/conv/"+key.String(), `{"s":"theirs"}`); err != nil {
		t.Fatal(err)
	}
	if got, trips := read(); got.SessionID != "theirs" || trips != 1 {
		t.Fatalf("after Unprime: %+v after %d reads, want theirs read afresh", got, trips)
	}
}
