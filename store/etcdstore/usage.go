package etcdstore

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/golem-chat/golem/store"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// usageKeys are the keys of UsageTotals' fields, in its order: the
// conversation ever and this month, the user today and this month,
// everyone today and this month (UTC's days and months).
func (s *Store) usageKeys(conversation store.Key, user string, at time.Time) [6]string {
	day, month := at.UTC().Format("2006-01-02"), at.UTC().Format("2006-01")
	p, c := s.prefix+"usage/", conversation.String()
	return [6]string{
		p + "c\x00" + c,
		p + "c\x00" + c + "\x00" + month,
		p + "u\x00" + user + "\x00" + day,
		p + "u\x00" + user + "\x00" + month,
		p + "d\x00" + day,
		p + "m\x00" + month,
	}
}

// readUsage reads the six totals from the answers of their gets, with
// their mod revisions (0: absent).
func readUsage(resps []*etcdserverpb.ResponseOp) (totals [6]store.Usage, revs [6]int64, err error) {
	for i, r := range resps {
		kvs := r.GetResponseRange().Kvs
		if len(kvs) == 0 {
			continue
		}
		if err := json.Unmarshal(kvs[0].Value, &totals[i]); err != nil {
			return totals, revs, fmt.Errorf("%w: usage %q: %w", store.ErrCorrupt, kvs[0].Key, err)
		}
		revs[i] = kvs[0].ModRevision
	}
	return totals, revs, nil
}

// An addition to the totals commits only if their mod revisions are
// still the ones read, and learns the totals as they are now when not
// (see knownRecord for a conversation's record). So it need not read them
// first when this store knows them: those it last read or wrote. Another
// writer (another replica's turn ending) refuses the addition, which is
// tried again with what that writer left: the round trips of a read and a
// write, as without them.

// knownUsage are the totals this store last read or wrote, at most
// maxWritten.
type knownUsage struct {
	mu     sync.Mutex
	totals map[string]knownTotal // by key
}

type knownTotal struct {
	u   store.Usage
	rev int64 // 0: absent
}

// known returns the totals of keys if all are known.
func (k *knownUsage) known(keys [6]string) (totals [6]store.Usage, revs [6]int64, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, key := range keys {
		t, ok := k.totals[key]
		if !ok {
			return totals, revs, false
		}
		totals[i], revs[i] = t.u, t.rev
	}
	return totals, revs, true
}

// note keeps the totals of keys as read or written at revs.
func (k *knownUsage) note(keys [6]string, totals [6]store.Usage, revs [6]int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.totals == nil || len(k.totals)+len(keys) > maxWritten {
		k.totals = map[string]knownTotal{}
	}
	for i, key := range keys {
		k.totals[key] = knownTotal{u: totals[i], rev: revs[i]}
	}
}

// forget drops the totals of keys: a write whose outcome is not known.
func (k *knownUsage) forget(keys [6]string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, key := range keys {
		delete(k.totals, key)
	}
}

// added notes the totals an addition of u to totals wrote at rev.
func (k *knownUsage) added(keys [6]string, totals [6]store.Usage, u store.Usage, rev int64) {
	var revs [6]int64
	for i := range totals {
		totals[i], revs[i] = totals[i].Add(u), rev
	}
	k.note(keys, totals, revs)
}

func gets(keys [6]string) []clientv3.Op {
	ops := make([]clientv3.Op, len(keys))
	for i, k := range keys {
		ops[i] = clientv3.OpGet(k)
	}
	return ops
}

// AddUsage implements store.UsageLedger: it reads the six totals (unless
// known, see knownUsage) and writes them added to if none has changed
// since, retrying otherwise.
func (s *Store) AddUsage(conversation store.Key, user string, at time.Time, u store.Usage) error {
	ctx, cancel, err := s.call()
	if err != nil {
		return s.fail("add usage", err)
	}
	defer cancel()
	keys := s.usageKeys(conversation, user, at)
	totals, revs, ok := s.usage.known(keys)
	if !ok {
		resp, err := s.cli.Txn(ctx).Then(gets(keys)...).Commit()
		if err != nil {
			return s.fail("add usage", err)
		}
		if totals, revs, err = readUsage(resp.Responses); err != nil {
			return s.fail("add usage", err)
		}
	}
	for range maxRetries {
		cmps, puts := addOps(keys, totals, revs, u)
		t, err := s.txn(ctx, cmps, puts, gets(keys)...)
		if err != nil {
			s.usage.forget(keys)
			return s.fail("add usage", err)
		}
		if t.Succeeded {
			s.usage.added(keys, totals, u, t.Header.Revision)
			return nil
		}
		if totals, revs, err = readUsage(t.Responses); err != nil {
			return s.fail("add usage", err)
		}
		s.usage.note(keys, totals, revs)
	}
	return s.fail("add usage", fmt.Errorf("%d writers came between the read and the write", maxRetries))
}

// addOps are the compares and puts that add u to the totals of keys, read
// at revs.
func addOps(keys [6]string, totals [6]store.Usage, revs [6]int64, u store.Usage) ([]clientv3.Cmp, []clientv3.Op) {
	cmps := make([]clientv3.Cmp, len(keys))
	puts := make([]clientv3.Op, len(keys))
	for i, k := range keys {
		cmps[i] = clientv3.Compare(clientv3.ModRevision(k), "=", revs[i])
		raw, _ := json.Marshal(totals[i].Add(u))
		puts[i] = clientv3.OpPut(k, string(raw))
	}
	return cmps, puts
}

// UsageTotals implements store.UsageLedger, in one read.
func (s *Store) UsageTotals(conversation store.Key, user string, at time.Time) (store.UsageTotals, error) {
	var t store.UsageTotals
	ctx, cancel, err := s.call()
	if err != nil {
		return t, s.fail("read usage", err)
	}
	defer cancel()
	resp, err := s.cli.Txn(ctx).Then(gets(s.usageKeys(conversation, user, at))...).Commit()
	if err != nil {
		return t, s.fail("read usage", err)
	}
	keys := s.usageKeys(conversation, user, at)
	totals, revs, err := readUsage(resp.Responses)
	if err != nil {
		return t, s.fail("read usage", err)
	}
	s.usage.note(keys, totals, revs)
	t.Conversation, t.ConversationMonth, t.UserToday, t.UserMonth, t.Today, t.Month =
		totals[0], totals[1], totals[2], totals[3], totals[4], totals[5]
	return t, nil
}
