package etcdstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/golem-chat/golem/store"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// maxTxnOps is how many reads one transaction of ConversationSchedules
// makes, within etcd's default --max-txn-ops (128).
const maxTxnOps = 100

func (s *Store) scheduleKey(id string) string { return s.prefix + "schedules/" + id }

// scheduleDir is where key's index entries are: schedule_keys/ESCAPED/, the
// key path-escaped so that no conversation's entries share a prefix with
// another's.
func (s *Store) scheduleDir(key store.Key) string {
	return s.prefix + "schedule_keys/" + url.PathEscape(key.String()) + "/"
}

func decodeSchedule(kv *mvccpb.KeyValue) (store.Schedule, error) {
	var sc store.Schedule
	if err := json.Unmarshal(kv.Value, &sc); err != nil {
		return store.Schedule{}, fmt.Errorf("%w: schedule %q: %w", store.ErrCorrupt, kv.Key, err)
	}
	return sc, nil
}

// logUndecoded logs the record of the schedule id, which a listing leaves
// out because it does not decode, for the operator to delete.
func logUndecoded(id string, err error) {
	slog.Warn("store: a schedule record does not decode; left out of the listing", "schedule", id, "err", err)
}

// writeSchedule is the write of sc over was (nil: none stored), with its
// index entry when sc is new in its conversation: moved when sc's
// conversation changed. A save in the same conversation leaves the entry
// be (no write of it).
func (s *Store) writeSchedule(sc store.Schedule, was *store.Schedule) ([]clientv3.Op, error) {
	raw, err := json.Marshal(sc)
	if err != nil {
		return nil, err
	}
	ops := []clientv3.Op{clientv3.OpPut(s.scheduleKey(sc.ID), string(raw))}
	if was == nil || was.Key != sc.Key {
		ops = append(ops, clientv3.OpPut(s.scheduleDir(sc.Key)+sc.ID, ""))
	}
	if was != nil && was.Key != sc.Key {
		ops = append(ops, clientv3.OpDelete(s.scheduleDir(was.Key)+sc.ID))
	}
	return ops, nil
}

// entriesOf are the keys of the schedule id's index entries in any
// conversation, for a record that does not decode and so does not tell
// its conversation. It reads the keys of the whole index.
func (s *Store) entriesOf(ctx context.Context, id string) ([]string, error) {
	dir := s.prefix + "schedule_keys/"
	resp, err := s.cli.Get(ctx, dir, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, kv := range resp.Kvs {
		// KEY/ID, KEY path-escaped: the id is after the first slash.
		if _, entry, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), dir), "/"); ok && entry == id {
			keys = append(keys, string(kv.Key))
		}
	}
	return keys, nil
}

// AddSchedule implements store.Schedules: it counts the conversation's
// index entries and writes if none was added since the count (a compare
// of the entries' mod revisions) and the id is still free, retrying when
// another add came between.
func (s *Store) AddSchedule(sc store.Schedule, max int) error {
	if sc.ID == "" {
		return errors.New("store: add schedule: empty id")
	}
	ctx, cancel, err := s.call()
	if err != nil {
		return s.fail("add schedule", err)
	}
	defer cancel()
	ops, err := s.writeSchedule(sc, nil)
	if err != nil {
		return s.fail("add schedule", err)
	}
	k, dir := s.scheduleKey(sc.ID), s.scheduleDir(sc.Key)
	for range maxRetries {
		cmps := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(k), "=", 0)}
		if max > 0 {
			resp, err := s.cli.Get(ctx, dir, clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				return s.fail("add schedule", err)
			}
			if resp.Count >= int64(max) {
				return store.ErrScheduleLimit
			}
			// No entry of the conversation is newer than the count.
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(dir), "<", resp.Header.Revision+1).WithPrefix())
		}
		t, err := s.txn(ctx, cmps, ops, clientv3.OpGet(k, clientv3.WithCountOnly()))
		if err != nil {
			return s.fail("add schedule", err)
		}
		if t.Succeeded {
			return nil
		}
		if t.Responses[0].GetResponseRange().Count > 0 {
			return store.ErrScheduleExists
		}
	}
	return s.fail("add schedule", fmt.Errorf("%d writers came between the count and the write", maxRetries))
}

// SaveSchedule implements store.Schedules.
func (s *Store) SaveSchedule(sc store.Schedule) error {
	if sc.ID == "" {
		return errors.New("store: save schedule: empty id")
	}
	_, err := s.changeSchedule(sc.ID, "save schedule", true, func(was *store.Schedule) (store.Schedule, bool) { return sc, true })
	return err
}

// Schedule implements store.Schedules.
func (s *Store) Schedule(id string) (store.Schedule, bool, error) {
	ctx, cancel, err := s.call()
	if err != nil {
		return store.Schedule{}, false, s.fail("read schedule", err)
	}
	defer cancel()
	resp, err := s.cli.Get(ctx, s.scheduleKey(id))
	if err != nil {
		return store.Schedule{}, false, s.fail("read schedule", err)
	}
	if len(resp.Kvs) == 0 {
		return store.Schedule{}, false, nil
	}
	sc, err := decodeSchedule(resp.Kvs[0])
	if err != nil {
		return store.Schedule{}, false, s.fail("read schedule", err)
	}
	return sc, true, nil
}

// UpdateSchedule implements store.Schedules: it reads the record and
// writes fn's change if the record's mod revision is still the one read,
// retrying otherwise; so of replicas racing to fire one instant
// (store.FireSchedule) exactly one succeeds.
func (s *Store) UpdateSchedule(id string, fn func(sc *store.Schedule) bool) (bool, error) {
	if id == "" {
		return false, errors.New("store: update schedule: empty id")
	}
	return s.changeSchedule(id, "update schedule", false, func(was *store.Schedule) (store.Schedule, bool) {
		if was == nil {
			return store.Schedule{}, false
		}
		sc := *was
		if !fn(&sc) {
			return sc, false
		}
		sc.ID = id
		return sc, true
	})
}

// changeSchedule writes what change makes of the record id (nil: none
// stored) if the record's mod revision is still the one read, retrying
// otherwise. found reports whether a record was there. A record that does
// not decode fails it, unless replace: then change gets nil, and the
// record's index entries go.
func (s *Store) changeSchedule(id, op string, replace bool, change func(was *store.Schedule) (store.Schedule, bool)) (found bool, err error) {
	ctx, cancel, err := s.call()
	if err != nil {
		return false, s.fail(op, err)
	}
	defer cancel()
	k := s.scheduleKey(id)
	resp, err := s.cli.Get(ctx, k)
	for range maxRetries {
		if err != nil {
			return found, s.fail(op, err)
		}
		var was *store.Schedule
		var stray []string // the entries of a record that does not decode
		rev := int64(0)
		if found = len(resp.Kvs) > 0; found {
			rev = resp.Kvs[0].ModRevision
			sc, err := decodeSchedule(resp.Kvs[0])
			switch {
			case err == nil:
				was = &sc
			case !replace:
				return true, s.fail(op, err)
			default:
				if stray, err = s.entriesOf(ctx, id); err != nil {
					return true, s.fail(op, err)
				}
			}
		}
		sc, write := change(was)
		if !write {
			return found, nil
		}
		ops, err := s.writeSchedule(sc, was)
		if err != nil {
			return found, s.fail(op, err)
		}
		for _, k := range stray {
			if k != s.scheduleDir(sc.Key)+id { // put by ops: a txn names a key once
				ops = append(ops, clientv3.OpDelete(k))
			}
		}
		t, err := s.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", rev)}, ops, clientv3.OpGet(k))
		if err != nil {
			return found, s.fail(op, err)
		}
		if t.Succeeded {
			return found, nil
		}
		resp, err = (*clientv3.GetResponse)(t.Responses[0].GetResponseRange()), nil
	}
	return found, s.fail(op, fmt.Errorf("%d writers came between the read and the write", maxRetries))
}

// DeleteSchedule implements store.Schedules: the record and its index
// entry, if the record is still the one read.
func (s *Store) DeleteSchedule(id string) error {
	if id == "" {
		return errors.New("store: delete schedule: empty id")
	}
	ctx, cancel, err := s.call()
	if err != nil {
		return s.fail("delete schedule", err)
	}
	defer cancel()
	k := s.scheduleKey(id)
	resp, err := s.cli.Get(ctx, k)
	for range maxRetries {
		if err != nil {
			return s.fail("delete schedule", err)
		}
		if len(resp.Kvs) == 0 {
			return nil
		}
		ops := []clientv3.Op{clientv3.OpDelete(k)}
		if sc, err := decodeSchedule(resp.Kvs[0]); err == nil {
			ops = append(ops, clientv3.OpDelete(s.scheduleDir(sc.Key)+id))
		} else { // its conversation is unknown
			entries, err := s.entriesOf(ctx, id)
			if err != nil {
				return s.fail("delete schedule", err)
			}
			for _, e := range entries {
				ops = append(ops, clientv3.OpDelete(e))
			}
		}
		t, err := s.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", resp.Kvs[0].ModRevision)}, ops, clientv3.OpGet(k))
		if err != nil {
			return s.fail("delete schedule", err)
		}
		if t.Succeeded {
			return nil
		}
		resp, err = (*clientv3.GetResponse)(t.Responses[0].GetResponseRange()), nil
	}
	return s.fail("delete schedule", fmt.Errorf("%d writers came between the read and the delete", maxRetries))
}

// AllSchedules implements store.Schedules, in one range read.
func (s *Store) AllSchedules() ([]store.Schedule, error) {
	ctx, cancel, err := s.call()
	if err != nil {
		return nil, s.fail("read schedules", err)
	}
	defer cancel()
	resp, err := s.cli.Get(ctx, s.prefix+"schedules/", clientv3.WithPrefix())
	if err != nil {
		return nil, s.fail("read schedules", err)
	}
	all := make([]store.Schedule, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if sc, err := decodeSchedule(kv); err == nil {
			all = append(all, sc)
		} else {
			logUndecoded(strings.TrimPrefix(string(kv.Key), s.scheduleKey("")), err)
		}
	}
	store.SortSchedules(all)
	return all, nil
}

// ConversationSchedules implements store.Schedules: a range read of key's
// index entries, then the records they name, read at the index's
// revision in transactions of maxTxnOps reads.
func (s *Store) ConversationSchedules(key store.Key) ([]store.Schedule, error) {
	ctx, cancel, err := s.call()
	if err != nil {
		return nil, s.fail("read a conversation's schedules", err)
	}
	defer cancel()
	out, err := s.conversationSchedules(ctx, key)
	if err != nil {
		return nil, s.fail("read a conversation's schedules", err)
	}
	store.SortSchedules(out)
	return out, nil
}

func (s *Store) conversationSchedules(ctx context.Context, key store.Key) ([]store.Schedule, error) {
	dir := s.scheduleDir(key)
	idx, err := s.cli.Get(ctx, dir, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	out := make([]store.Schedule, 0, len(idx.Kvs))
	for i := 0; i < len(idx.Kvs); i += maxTxnOps {
		var gets []clientv3.Op
		for _, kv := range idx.Kvs[i:min(i+maxTxnOps, len(idx.Kvs))] {
			id := strings.TrimPrefix(string(kv.Key), dir)
			gets = append(gets, clientv3.OpGet(s.scheduleKey(id), clientv3.WithRev(idx.Header.Revision)))
		}
		t, err := s.cli.Txn(ctx).Then(gets...).Commit()
		if err != nil {
			return nil, err
		}
		for j, r := range t.Responses {
			kvs := r.GetResponseRange().Kvs
			if len(kvs) == 0 {
				return nil, fmt.Errorf("%w: the index names %q, which is not there", store.ErrCorrupt, idx.Kvs[i+j].Key)
			}
			if sc, err := decodeSchedule(kvs[0]); err == nil {
				out = append(out, sc)
			} else {
				logUndecoded(strings.TrimPrefix(string(kvs[0].Key), s.scheduleKey("")), err)
			}
		}
	}
	return out, nil
}
