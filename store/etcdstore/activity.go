package etcdstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golem-chat/golem/store"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ListConversations implements store.Activity: from the mirror of the
// records' last use (see activityMirror), current through the revision
// read as it is called; else every record under conv/ in one range read,
// by key.
func (s *Store) ListConversations() ([]store.ConversationTime, error) {
	ctx, cancel, err := s.call()
	if err != nil {
		return nil, s.fail("list conversations", err)
	}
	defer cancel()
	if out, ok := s.activity.list(ctx); ok {
		return out, nil
	}
	dir := s.prefix + "conv/"
	resp, err := s.cli.Get(ctx, dir, clientv3.WithPrefix())
	if err != nil {
		return nil, s.fail("list conversations", err)
	}
	out := make([]store.ConversationTime, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		key, err := store.ParseKey(strings.TrimPrefix(string(kv.Key), dir))
		if err != nil {
			return nil, s.fail("list conversations", fmt.Errorf("%w: %w", store.ErrCorrupt, err))
		}
		at, ok := store.LastUsedOf(kv.Value) // the listing reads only the time
		if !ok {
			c, err := decodeConversation(key, kv)
			if err != nil {
				return nil, s.fail("list conversations", err)
			}
			at = c.LastUsed
		}
		out = append(out, store.ConversationTime{Key: key, LastUsed: at})
	}
	return out, nil
}

// turnLogDir is where key's turn records are: turnlog/ESCAPED/, the key
// path-escaped so that no conversation's folder holds another's.
func (s *Store) turnLogDir(key store.Key) string {
	return s.prefix + "turnlog/" + url.PathEscape(key.String()) + "/"
}

// RecordTurn implements store.Activity: the record (recordOps), then, in
// a second transaction when there are too many, the conversation's
// records older than its last store.MaxTurnRecords (trimTurns).
func (s *Store) RecordTurn(t store.TurnRecord) error {
	if t.ID == "" || t.Key.IsZero() {
		return errors.New("store: record turn: empty id or key")
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("store: record turn: %w", err)
	}
	ctx, cancel, err := s.call()
	if err != nil {
		return s.fail("record turn", err)
	}
	defer cancel()
	if len(raw) > store.MaxValue {
		return s.fail("record turn", fmt.Errorf("%w: %d bytes, at most %d", store.ErrTooLarge, len(raw), store.MaxValue))
	}
	resp, err := s.txn(ctx, nil, s.recordOps(t, raw))
	if err != nil {
		return s.fail("record turn", err)
	}
	if err := s.trimTurns(ctx, t.Key, resp.Responses[len(resp.Responses)-1]); err != nil {
		return s.fail("record turn", err)
	}
	return nil
}

// recordOps put t's record, encoded as raw, under its start time (20
// digits of unix ns, so that keys sort by it), and read in the same round
// trip the newest keys of its conversation's folder, for trimTurns. When
// the conversation's records are known to be full (see turnCuts) and t is
// newer than the oldest, they delete that one and any older in between,
// so that no second transaction is needed to trim them.
func (s *Store) recordOps(t store.TurnRecord, raw []byte) []clientv3.Op {
	dir := s.turnLogDir(t.Key)
	k := fmt.Sprintf("%s%020d-%s", dir, t.Started.UnixNano(), t.ID)
	ops := []clientv3.Op{clientv3.OpPut(k, string(raw))}
	if cut, ok := s.cuts.oldest(t.Key); ok && k > cut {
		ops = append(ops, clientv3.OpDelete(dir, clientv3.WithRange(cut+"\x00")))
	}
	return append(ops, clientv3.OpGet(dir, clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(store.MaxTurnRecords+1)))
}

// trimTurns deletes key's records older than its last
// store.MaxTurnRecords, given the answer of recordOps' read: everything
// from the folder's start up to and including the newest record past the
// limit, in one range delete. It notes the oldest record kept when the
// conversation has its full count, for the next recordOps.
func (s *Store) trimTurns(ctx context.Context, key store.Key, newest *etcdserverpb.ResponseOp) error {
	kvs := newest.GetResponseRange().Kvs
	if len(kvs) < store.MaxTurnRecords {
		s.cuts.forget(key)
		return nil
	}
	if len(kvs) > store.MaxTurnRecords {
		oldest := string(kvs[store.MaxTurnRecords].Key)
		if _, err := s.txn(ctx, nil, []clientv3.Op{clientv3.OpDelete(s.turnLogDir(key), clientv3.WithRange(oldest+"\x00"))}); err != nil {
			s.cuts.forget(key)
			return err
		}
	}
	s.cuts.note(key, string(kvs[store.MaxTurnRecords-1].Key))
	return nil
}

// turnCuts are, per conversation whose records this store last wrote,
// the key of the oldest record kept when it kept store.MaxTurnRecords: the
// next record pushes that one out. Another replica's records in between
// only add newer ones, so deleting up to that key never deletes one of
// the newest; the read after the delete tells whether more must go. At
// most maxWritten conversations.
type turnCuts struct {
	mu  sync.Mutex
	cut map[store.Key]string
}

func (c *turnCuts) oldest(key store.Key) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.cut[key]
	return k, ok
}

func (c *turnCuts) note(key store.Key, oldest string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut == nil || len(c.cut) >= maxWritten {
		c.cut = map[store.Key]string{}
	}
	c.cut[key] = oldest
}

func (c *turnCuts) forget(key store.Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.cut, key)
}

// RecentTurns implements store.Activity.
func (s *Store) RecentTurns(key store.Key) ([]store.TurnRecord, error) {
	ctx, cancel, err := s.call()
	if err != nil {
		return nil, s.fail("read recent turns", err)
	}
	defer cancel()
	resp, err := s.cli.Get(ctx, s.turnLogDir(key), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(store.MaxTurnRecords))
	if err != nil {
		return nil, s.fail("read recent turns", err)
	}
	out := make([]store.TurnRecord, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var t store.TurnRecord
		if err := json.Unmarshal(kv.Value, &t); err != nil {
			return nil, s.fail("read recent turns", fmt.Errorf("%w: %q: %w", store.ErrCorrupt, kv.Key, err))
		}
		out = append(out, t)
	}
	return out, nil
}

// DailyUsage implements store.Activity: everyone's daily totals are
// usage/d\x00DAY, read in one range.
func (s *Store) DailyUsage(from, to time.Time) ([]store.DayUsage, error) {
	days := store.Days(from, to)
	out := make([]store.DayUsage, len(days))
	if len(days) == 0 {
		return out, nil
	}
	ctx, cancel, err := s.call()
	if err != nil {
		return nil, s.fail("read daily usage", err)
	}
	defer cancel()
	p := s.prefix + "usage/d\x00"
	resp, err := s.cli.Get(ctx, p+days[0], clientv3.WithRange(p+days[len(days)-1]+"\x00"))
	if err != nil {
		return nil, s.fail("read daily usage", err)
	}
	have := make(map[string]store.Usage, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var u store.Usage
		if err := json.Unmarshal(kv.Value, &u); err != nil {
			return nil, s.fail("read daily usage", fmt.Errorf("%w: %q: %w", store.ErrCorrupt, kv.Key, err))
		}
		have[strings.TrimPrefix(string(kv.Key), p)] = u
	}
	for i, day := range days {
		out[i] = store.DayUsage{Day: day, Usage: have[day]}
	}
	return out, nil
}
