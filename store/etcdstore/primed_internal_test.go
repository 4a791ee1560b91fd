package etcdstore

import (
	"fmt"
	"testing"

	"github.com/golem-chat/golem/store"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Past maxWritten writes the known revisions are dropped and the floor
// keeps what they said: a record read before the newest of them is not
// used, one read after is.
func TestPrimedWritesStayBounded(t *testing.T) {
	s := &Store{}
	at := func(rev int64) *clientv3.TxnResponse {
		return &clientv3.TxnResponse{Header: &pb.ResponseHeader{Revision: rev}}
	}
	lost := store.NewKey("rec", "", "lost", "")
	s.wrote(lost, nil) // its answer lost: any revision
	for i := range maxWritten + 1 {
		s.wrote(store.NewKey("rec", "", fmt.Sprint("C", i), ""), at(int64(10+i)))
	}
	if n := len(s.primed.written); n > maxWritten {
		t.Fatalf("%d writes kept, at most %d", n, maxWritten)
	}
	key := store.NewKey("rec", "", "C7", "")
	s.Prime(key, 100, nil) // read before writes the floor stands for
	if _, ok := s.takePrimed(key); ok {
		t.Error("a record read before a forgotten write was primed")
	}
	s.Prime(key, 10+maxWritten+1, nil)
	if _, ok := s.takePrimed(key); !ok {
		t.Error("a record read after every write was not primed")
	}
	s.Prime(lost, 1<<40, nil)
	if _, ok := s.takePrimed(lost); ok {
		t.Error("a record primed after a write whose revision is unknown")
	}
}
