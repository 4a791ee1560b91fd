package etcdstore_test

import (
	"context"
	"testing"

	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/store/etcdstore"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// fenced is an etcd store under prefix whose writes are fenced as a
// replica's are: by the owner key PREFIX/cluster/owner/k and the member
// key PREFIX/cluster/member/me, this replica's lease being mine; theirs
// is another replica's lease. The test puts the keys it needs.
type fenced struct {
	s             *etcdstore.Store
	cli           *clientv3.Client
	mine, theirs  clientv3.LeaseID
	owner, member string
}

func newFenced(t *testing.T, prefix string) fenced {
	t.Helper()
	c := etcdtest.Start(t, 1)
	s, err := etcdstore.Open(etcdstore.Config{Endpoints: c.Endpoints, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f := fenced{s: s, cli: s.Client(), owner: prefix + "/cluster/owner/k", member: prefix + "/cluster/member/me"}
	grant := func() clientv3.LeaseID {
		l, err := f.cli.Grant(context.Background(), 60)
		if err != nil {
			t.Fatal(err)
		}
		return l.ID
	}
	f.mine, f.theirs = grant(), grant()
	s.SetFence(func(store.Key) (string, string, clientv3.LeaseID, bool) { return f.owner, f.member, f.mine, true })
	return f
}
