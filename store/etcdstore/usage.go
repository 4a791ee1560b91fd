package etcdstore

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/golem-chat/golem/store"
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

// readUsage reads the six totals in one transaction, with their mod
// revisions (0: absent).
func (s *Store) readUsage(resp *clientv3.TxnResponse) (totals [6]store.Usage, revs [6]int64, err error) {
	for i, r := range resp.Responses {
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

func gets(keys [6]string) []clientv3.Op {
	ops := make([]clientv3.Op, len(keys))
	for i, k := range keys {
		ops[i] = clientv3.OpGet(k)
	}
	return ops
}

// AddUsage implements store.UsageLedger: it reads the six totals and
// writes them added to if none has changed since, retrying otherwise.
func (s *Store) AddUsage(conversation store.Key, user string, at time.Time, u store.Usage) error {
	ctx, cancel, err := s.call()
	if err != nil {
		return s.fail("add usage", err)
	}
	defer cancel()
	keys := s.usageKeys(conversation, user, at)
	resp, err := s.cli.Txn(ctx).Then(gets(keys)...).Commit()
	for range maxRetries {
		if err != nil {
			return s.fail("add usage", err)
		}
		totals, revs, err := s.readUsage(resp)
		if err != nil {
			return s.fail("add usage", err)
		}
		cmps := make([]clientv3.Cmp, len(keys))
		puts := make([]clientv3.Op, len(keys))
		for i, k := range keys {
			cmps[i] = clientv3.Compare(clientv3.ModRevision(k), "=", revs[i])
			raw, _ := json.Marshal(totals[i].Add(u))
			puts[i] = clientv3.OpPut(k, string(raw))
		}
		t, err := s.txn(ctx, cmps, puts, gets(keys)...)
		if err != nil {
			return s.fail("add usage", err)
		}
		if t.Succeeded {
			return nil
		}
		resp = t
	}
	return s.fail("add usage", fmt.Errorf("%d writers came between the read and the write", maxRetries))
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
	totals, _, err := s.readUsage(resp)
	if err != nil {
		return t, s.fail("read usage", err)
	}
	t.Conversation, t.ConversationMonth, t.UserToday, t.UserMonth, t.Today, t.Month =
		totals[0], totals[1], totals[2], totals[3], totals[4], totals[5]
	return t, nil
}
