package etcdstore

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/golem-chat/golem/store"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A seenLease is a lease that the seen ids of one ttl share, so that etcd
// drops them once they have expired without a lease per id: it is granted
// for ttl plus a slack and used for the ids marked during that slack, each
// of which expires before the lease does.
type seenLease struct {
	id       clientv3.LeaseID
	deadline time.Time // the lease ends no earlier than this
}

// leaseSlack is how long one lease takes new seen ids of ttl: the longer,
// the fewer grants, the longer expired ids outstay their ttl.
func leaseSlack(ttl time.Duration) time.Duration { return max(ttl/8, time.Minute) }

// MarkSeen implements store.Seen. A new id is one transaction: put the id
// if it is absent. An id already there is seen unless its stored expiry
// has passed, when it is replaced if its mod revision is still the one
// read, so that of concurrent callers on any replicas exactly one gets
// true.
func (s *Store) MarkSeen(id string, ttl time.Duration) (bool, error) {
	if id == "" {
		return false, errors.New("store: mark seen: empty id")
	}
	if ttl <= 0 {
		return false, fmt.Errorf("store: mark seen: ttl %v is not positive", ttl)
	}
	ctx, cancel, err := s.call()
	if err != nil {
		return false, s.fail("mark seen", err)
	}
	defer cancel()
	k := s.prefix + "seen/" + id
	var rev int64 // the revision to replace; 0: absent
	for range maxRetries {
		now := time.Now()
		lease, err := s.seenLease(ttl, now)
		if err != nil {
			return false, s.fail("mark seen", err)
		}
		put := clientv3.OpPut(k, strconv.FormatInt(now.Add(ttl).UnixNano(), 10), clientv3.WithLease(lease))
		var cond clientv3.Cmp
		if rev == 0 {
			cond = clientv3.Compare(clientv3.CreateRevision(k), "=", 0)
		} else {
			cond = clientv3.Compare(clientv3.ModRevision(k), "=", rev)
		}
		resp, err := s.txn(ctx, []clientv3.Cmp{cond}, []clientv3.Op{put}, clientv3.OpGet(k))
		if errors.Is(err, rpctypes.ErrLeaseNotFound) { // revoked, or etcd restored from a backup
			s.dropLease(ttl)
			continue
		}
		if err != nil {
			return false, s.fail("mark seen", err)
		}
		if resp.Succeeded {
			return true, nil
		}
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 { // dropped meanwhile
			rev = 0
			continue
		}
		expiry, err := strconv.ParseInt(string(kvs[0].Value), 10, 64)
		if err == nil && expiry > now.UnixNano() {
			return false, nil
		}
		rev = kvs[0].ModRevision // expired (or unreadable): replace it
	}
	return false, s.fail("mark seen", fmt.Errorf("%d writers came between the read and the write", maxRetries))
}

// SeenOp is the write MarkSeen makes for a new id, for a caller that puts
// it in a transaction of its own (a replica's mailbox, so that a message
// is kept and its event id seen in one round trip): the compare that the
// id is absent, and the put. When the compare fails, the caller asks
// MarkSeen, which knows an expired id from a seen one.
func (s *Store) SeenOp(id string, ttl time.Duration) (absent clientv3.Cmp, put clientv3.Op, err error) {
	if id == "" || ttl <= 0 {
		return clientv3.Cmp{}, clientv3.Op{}, fmt.Errorf("store: mark seen: id %q, ttl %v", id, ttl)
	}
	now := time.Now()
	lease, err := s.seenLease(ttl, now)
	if err != nil {
		return clientv3.Cmp{}, clientv3.Op{}, s.fail("mark seen", err)
	}
	k := s.prefix + "seen/" + id
	return clientv3.Compare(clientv3.CreateRevision(k), "=", 0),
		clientv3.OpPut(k, strconv.FormatInt(now.Add(ttl).UnixNano(), 10), clientv3.WithLease(lease)), nil
}

// DropSeenLease forgets the lease of ttl's ids, after a transaction with
// SeenOp's put failed with ErrLeaseNotFound.
func (s *Store) DropSeenLease(ttl time.Duration) { s.dropLease(ttl) }

// seenLease returns a lease that outlives an id marked now with ttl,
// granting one when the last one granted for ttl does not.
func (s *Store) seenLease(ttl time.Duration, now time.Time) (clientv3.LeaseID, error) {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	if l, ok := s.leases[ttl]; ok && !now.Add(ttl).After(l.deadline) {
		return l.id, nil
	}
	ctx, cancel, err := s.call()
	if err != nil {
		return 0, err
	}
	defer cancel()
	life := ttl + leaseSlack(ttl)
	secs := int64((life + time.Second - 1) / time.Second)
	resp, err := s.cli.Grant(ctx, secs)
	if err != nil {
		return 0, fmt.Errorf("grant a lease for seen ids: %w", err)
	}
	if len(s.leases) >= 16 { // a handful of ttls are used; never grow without bound
		clear(s.leases)
	}
	// etcd counts the lease's life from its grant, after now.
	s.leases[ttl] = seenLease{id: resp.ID, deadline: now.Add(time.Duration(resp.TTL) * time.Second)}
	return resp.ID, nil
}

func (s *Store) dropLease(ttl time.Duration) {
	s.leaseMu.Lock()
	delete(s.leases, ttl)
	s.leaseMu.Unlock()
}

var _ store.Seen = (*Store)(nil)
