package etcdstore

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/golem-chat/golem/store"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// FinishTurn implements store.Turns in one transaction, fenced when it
// changes the conversation's record: the record compared on its mod
// revision as UpdateConversation does, the usage totals as AddUsage does,
// and the turn's record put with the read that trims the conversation's
// records (a second transaction when there are too many, as RecordTurn).
// What it must read first (the totals and the conversation's record,
// unless known: see knownUsage and knownRecord) it reads in one round trip
// before; a compare that fails answers with what is there now, and the
// transaction is tried again. Fenced, the usage and the turn's record are
// written on their own.
func (s *Store) FinishTurn(e store.TurnEnd) error {
	if e.Key.IsZero() {
		return errors.New("store: finish turn: empty key")
	}
	var record []byte
	if e.Record != nil {
		if e.Record.ID == "" || e.Record.Key.IsZero() {
			return errors.New("store: finish turn: record: empty id or key")
		}
		var err error
		if record, err = json.Marshal(e.Record); err != nil {
			return fmt.Errorf("store: finish turn: %w", err)
		}
		if len(record) > store.MaxValue {
			return s.fail("finish turn", fmt.Errorf("%w: turn record of %d bytes, at most %d", store.ErrTooLarge, len(record), store.MaxValue))
		}
	}
	ctx, cancel, err := s.call()
	if err != nil {
		return s.fail("finish turn", err)
	}
	defer cancel()
	ck := s.convKey(e.Key)
	var uk [6]string
	if e.Usage != nil {
		uk = s.usageKeys(e.Key, e.User, e.At)
	}
	// What is read first, in one round trip.
	var conv *mvccpb.KeyValue
	var reads []clientv3.Op
	known := true
	if e.Session != nil {
		if conv, known = s.knownRecord(e.Key); !known {
			reads = append(reads, clientv3.OpGet(ck))
		}
	}
	var totals [6]store.Usage
	var revs [6]int64
	readTotals := false
	if e.Usage != nil {
		var ok bool
		if totals, revs, ok = s.usage.known(uk); !ok {
			reads, readTotals = append(reads, gets(uk)...), true
		}
	}
	if len(reads) > 0 {
		resp, err := s.cli.Txn(ctx).Then(reads...).Commit()
		if err != nil {
			return s.fail("finish turn", err)
		}
		got := resp.Responses
		if !known {
			conv, got = firstKV(got[0].GetResponseRange().Kvs), got[1:]
			s.know(e.Key, conv)
		}
		if readTotals {
			if totals, revs, err = readUsage(got); err != nil {
				return s.fail("finish turn", err)
			}
		}
	}
	for range maxRetries {
		var cmps []clientv3.Cmp
		var ops, els []clientv3.Op
		var raw []byte // the conversation's record written, if it is
		if e.Session != nil {
			c, err := decodeConversation(e.Key, conv)
			if err != nil {
				return s.fail("finish turn", err)
			}
			if e.Session(&c) {
				raw = encodeConversation(c)
				cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(ck), "=", modRevision(conv)))
				ops = append(ops, clientv3.OpPut(ck, string(raw)))
				els = append(els, clientv3.OpGet(ck))
			}
		}
		if e.Usage != nil {
			c, puts := addOps(uk, totals, revs, *e.Usage)
			cmps, ops, els = append(cmps, c...), append(ops, puts...), append(els, gets(uk)...)
		}
		if e.Record != nil {
			ops = append(ops, s.recordOps(*e.Record, record)...)
		}
		if len(ops) == 0 {
			return nil
		}
		var t *clientv3.TxnResponse
		if raw != nil {
			t, err = s.keyTxn(ctx, e.Key, cmps, ops, els...)
			if err != nil || t.Succeeded {
				s.wrote(e.Key, t)
			}
		} else {
			t, err = s.txn(ctx, cmps, ops, els...)
		}
		if err != nil {
			if raw != nil {
				s.unknow(e.Key)
			}
			if e.Usage != nil {
				s.usage.forget(uk)
			}
		}
		if errors.Is(err, store.ErrFenced) {
			return s.fail("finish turn", errors.Join(err, s.finishFenced(e)))
		}
		if err != nil {
			return s.fail("finish turn", err)
		}
		if t.Succeeded {
			if raw != nil {
				s.knowWritten(e.Key, raw, t)
			}
			if e.Usage != nil {
				s.usage.added(uk, totals, *e.Usage, t.Header.Revision)
			}
			if e.Record != nil {
				if err := s.trimTurns(ctx, e.Record.Key, t.Responses[len(t.Responses)-1]); err != nil {
					return s.fail("finish turn", err)
				}
			}
			return nil
		}
		// Another writer came between: what it left, for the next try.
		got := t.Responses
		if raw != nil {
			conv, got = firstKV(got[0].GetResponseRange().Kvs), got[1:]
			s.know(e.Key, conv)
		}
		if e.Usage != nil {
			if totals, revs, err = readUsage(got); err != nil {
				return s.fail("finish turn", err)
			}
			s.usage.note(uk, totals, revs)
		}
	}
	return s.fail("finish turn", fmt.Errorf("%d writers came between the read and the write", maxRetries))
}

// finishFenced writes what of e counts whoever owns its conversation: the
// usage and the turn's record, on their own as before they shared the
// refused transaction.
func (s *Store) finishFenced(e store.TurnEnd) error {
	var errs []error
	if e.Usage != nil {
		errs = append(errs, s.AddUsage(e.Key, e.User, e.At, *e.Usage))
	}
	if e.Record != nil {
		errs = append(errs, s.RecordTurn(*e.Record))
	}
	return errors.Join(errs...)
}
