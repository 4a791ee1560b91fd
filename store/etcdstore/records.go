package etcdstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/golem-chat/golem/store"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// convRecord is a Conversation as stored: short JSON names, empty fields
// left out, the time in unix nanoseconds (the bbolt backend's record too).
type convRecord struct {
	Engine    string   `json:"e,omitempty"`
	Model     string   `json:"m,omitempty"`
	SessionID string   `json:"s,omitempty"`
	LastUsed  int64    `json:"u,omitempty"`
	Sessions  []string `json:"ss,omitempty"`
}

func (s *Store) convKey(k store.Key) string { return s.prefix + "conv/" + k.String() }

func decodeConversation(key store.Key, kv *mvccpb.KeyValue) (store.Conversation, error) {
	c := store.Conversation{Key: key}
	if kv == nil {
		return c, nil
	}
	var r convRecord
	if err := json.Unmarshal(kv.Value, &r); err != nil {
		return c, fmt.Errorf("%w: conversation %q: %w", store.ErrCorrupt, key, err)
	}
	c.Engine, c.Model, c.SessionID, c.Sessions = r.Engine, r.Model, r.SessionID, r.Sessions
	if r.LastUsed != 0 {
		c.LastUsed = time.Unix(0, r.LastUsed)
	}
	return c, nil
}

func encodeConversation(c store.Conversation) []byte {
	if c.LastUsed.IsZero() {
		c.LastUsed = time.Now()
	}
	raw, _ := json.Marshal(convRecord{Engine: c.Engine, Model: c.Model, SessionID: c.SessionID, LastUsed: c.LastUsed.UnixNano(), Sessions: c.Sessions})
	return raw
}

// Conversation implements store.Conversations. The first read after a
// claim takes the record the claim read (Prime).
func (s *Store) Conversation(key store.Key) (store.Conversation, error) {
	if kv, ok := s.takePrimed(key); ok {
		s.know(key, kv)
		c, err := decodeConversation(key, kv)
		if err != nil {
			return store.Conversation{Key: key}, s.fail("read conversation", err)
		}
		return c, nil
	}
	ctx, cancel, err := s.call()
	if err != nil {
		return store.Conversation{Key: key}, s.fail("read conversation", err)
	}
	defer cancel()
	resp, err := s.cli.Get(ctx, s.convKey(key))
	if err != nil {
		return store.Conversation{Key: key}, s.fail("read conversation", err)
	}
	var kv *mvccpb.KeyValue
	if len(resp.Kvs) > 0 {
		kv = resp.Kvs[0]
	}
	s.know(key, kv)
	c, err := decodeConversation(key, kv)
	if err != nil {
		return store.Conversation{Key: key}, s.fail("read conversation", err)
	}
	return c, nil
}

// SaveConversation implements store.Conversations.
func (s *Store) SaveConversation(c store.Conversation) error {
	if c.Key.IsZero() {
		return errors.New("store: save conversation: empty key")
	}
	ctx, cancel, err := s.call()
	if err != nil {
		return s.fail("save conversation", err)
	}
	defer cancel()
	raw := encodeConversation(c)
	if len(raw) > store.MaxValue {
		return s.fail("save conversation", fmt.Errorf("%w: %d bytes, at most %d", store.ErrTooLarge, len(raw), store.MaxValue))
	}
	resp, err := s.keyTxn(ctx, c.Key, nil, []clientv3.Op{clientv3.OpPut(s.convKey(c.Key), string(raw))})
	s.wrote(c.Key, resp)
	if err != nil {
		s.unknow(c.Key)
		return s.fail("save conversation", err)
	}
	s.knowWritten(c.Key, raw, resp)
	return nil
}

// UpdateConversation implements store.Conversations: it reads the record
// (unless known, see knownRecord), and writes fn's change if the record's
// mod revision is still the one read (0: still absent), retrying
// otherwise.
func (s *Store) UpdateConversation(key store.Key, fn func(c *store.Conversation) bool) error {
	if key.IsZero() {
		return errors.New("store: update conversation: empty key")
	}
	ctx, cancel, err := s.call()
	if err != nil {
		return s.fail("update conversation", err)
	}
	defer cancel()
	kv, err := s.readRecord(ctx, key)
	for range maxRetries {
		if err != nil {
			return s.fail("update conversation", err)
		}
		c, err := decodeConversation(key, kv)
		if err != nil {
			return s.fail("update conversation", err)
		}
		if !fn(&c) {
			return nil
		}
		k, raw := s.convKey(key), encodeConversation(c)
		t, err := s.keyTxn(ctx, key, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", modRevision(kv))},
			[]clientv3.Op{clientv3.OpPut(k, string(raw))}, clientv3.OpGet(k))
		if err != nil || t.Succeeded {
			s.wrote(key, t)
		}
		if err != nil {
			s.unknow(key)
			return s.fail("update conversation", err)
		}
		if t.Succeeded {
			s.knowWritten(key, raw, t)
			return nil
		}
		kv = firstKV(t.Responses[0].GetResponseRange().Kvs)
		s.know(key, kv)
	}
	return s.fail("update conversation", fmt.Errorf("%d writers came between the read and the write", maxRetries))
}

// readRecord is key's record (nil: none): the one known here, else read.
func (s *Store) readRecord(ctx context.Context, key store.Key) (*mvccpb.KeyValue, error) {
	if kv, ok := s.knownRecord(key); ok {
		return kv, nil
	}
	resp, err := s.cli.Get(ctx, s.convKey(key))
	if err != nil {
		return nil, err
	}
	return firstKV(resp.Kvs), nil
}

func firstKV(kvs []*mvccpb.KeyValue) *mvccpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	return kvs[0]
}

// modRevision is kv's, 0 for no record.
func modRevision(kv *mvccpb.KeyValue) int64 {
	if kv == nil {
		return 0
	}
	return kv.ModRevision
}

// ClearSession implements store.Conversations.
func (s *Store) ClearSession(key store.Key) error {
	return s.UpdateConversation(key, func(c *store.Conversation) bool {
		if c.SessionID == "" {
			return false
		}
		c.SessionID = ""
		return true
	})
}

// BeginTurn implements store.Turns.
func (s *Store) BeginTurn(t store.InFlight) error {
	if t.ID == "" {
		return errors.New("store: begin turn: empty id")
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("store: begin turn: %w", err)
	}
	ctx, cancel, err := s.call()
	if err != nil {
		return s.fail("begin turn", err)
	}
	defer cancel()
	if len(raw) > store.MaxValue {
		return s.fail("begin turn", fmt.Errorf("%w: %d bytes, at most %d", store.ErrTooLarge, len(raw), store.MaxValue))
	}
	ops := []clientv3.Op{clientv3.OpPut(s.prefix+"turns/"+t.ID, string(raw))}
	if mk := s.mailKey(t); mk != "" {
		ops = append(ops, clientv3.OpDelete(mk))
	}
	if _, err := s.keyTxn(ctx, t.Key, nil, ops); err != nil {
		return s.fail("begin turn", err)
	}
	return nil
}

// Mailbox names the key of a message's mail in its conversation's mailbox
// (package cluster's).
type Mailbox func(key store.Key, mail string) string

// SetMailbox has BeginTurn strike a turn's mail (store.InFlight.Mail) in
// the transaction that records the turn. Set before the first turn.
func (s *Store) SetMailbox(m Mailbox) {
	s.fenceMu.Lock()
	s.mailbox = m
	s.fenceMu.Unlock()
}

// StrikesMail implements store.MailStriker.
func (s *Store) StrikesMail() bool {
	s.fenceMu.RLock()
	defer s.fenceMu.RUnlock()
	return s.mailbox != nil
}

// mailKey is the key of t's mail, "" for none to strike.
func (s *Store) mailKey(t store.InFlight) string {
	s.fenceMu.RLock()
	m := s.mailbox
	s.fenceMu.RUnlock()
	if m == nil || t.Mail == "" {
		return ""
	}
	return m(t.Key, t.Mail)
}

// EndTurn implements store.Turns.
func (s *Store) EndTurn(id string) error {
	if id == "" {
		return errors.New("store: end turn: empty id")
	}
	ctx, cancel, err := s.call()
	if err != nil {
		return s.fail("end turn", err)
	}
	defer cancel()
	if err := s.remove(ctx, s.prefix+"turns/"+id); err != nil {
		return s.fail("end turn", err)
	}
	return nil
}

// InFlightTurns implements store.Turns.
func (s *Store) InFlightTurns() ([]store.InFlight, error) {
	turns, err := list[store.InFlight](s, "turns/")
	if err != nil {
		return nil, s.fail("list turns in flight", err)
	}
	slices.SortStableFunc(turns, func(a, b store.InFlight) int {
		return cmp.Or(a.Started.Compare(b.Started), cmp.Compare(a.ID, b.ID))
	})
	return turns, nil
}

// SaveApproval implements store.ApprovalLog.
func (s *Store) SaveApproval(a store.Approval) error {
	if a.ID == "" {
		return errors.New("store: save approval: empty id")
	}
	return s.putJSON("save approval", s.prefix+"approvals/"+a.ID, a)
}

// Approvals implements store.ApprovalLog. It reads every record in one
// range read; the audit trail is small records, one per permission asked.
func (s *Store) Approvals(pending bool) ([]store.Approval, error) {
	all, err := list[store.Approval](s, "approvals/")
	if err != nil {
		return nil, s.fail("read approvals", err)
	}
	out := all[:0]
	for _, a := range all {
		if !pending || a.Decision == "" {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b store.Approval) int {
		return cmp.Or(a.Asked.Compare(b.Asked), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// putJSON writes v as JSON under key.
func (s *Store) putJSON(op, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	ctx, cancel, err := s.call()
	if err != nil {
		return s.fail(op, err)
	}
	defer cancel()
	if err := s.put(ctx, key, raw); err != nil {
		return s.fail(op, err)
	}
	return nil
}

// list reads the JSON records under the prefix's dir.
func list[T any](s *Store, dir string) ([]T, error) {
	ctx, cancel, err := s.call()
	if err != nil {
		return nil, err
	}
	defer cancel()
	resp, err := s.cli.Get(ctx, s.prefix+dir, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var v T
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			return nil, fmt.Errorf("%w: %q: %w", store.ErrCorrupt, kv.Key, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// Load implements store.State.
func (s *Store) Load(key string) ([]byte, error) {
	ctx, cancel, err := s.call()
	if err != nil {
		return nil, s.fail("load "+key, err)
	}
	defer cancel()
	resp, err := s.cli.Get(ctx, s.prefix+"state/"+key)
	if err != nil {
		return nil, s.fail("load "+key, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	return append([]byte{}, resp.Kvs[0].Value...), nil // empty, not nil, for an empty value
}

// UpdateState implements store.State: a compare-and-swap on the key's
// mod revision (0: still absent), read again and retried when another
// writer came between.
func (s *Store) UpdateState(key string, fn func(old []byte) ([]byte, bool)) error {
	if key == "" {
		return errors.New("store: update state: empty key")
	}
	ctx, cancel, err := s.call()
	if err != nil {
		return s.fail("update "+key, err)
	}
	defer cancel()
	k := s.prefix + "state/" + key
	resp, err := s.cli.Get(ctx, k)
	for range maxRetries {
		if err != nil {
			return s.fail("update "+key, err)
		}
		var old []byte
		var rev int64
		if len(resp.Kvs) > 0 {
			old, rev = append([]byte{}, resp.Kvs[0].Value...), resp.Kvs[0].ModRevision
		}
		value, write := fn(old)
		if !write {
			return nil
		}
		if len(value) > store.MaxValue {
			return fmt.Errorf("store: update %s: %w: %d bytes, at most %d", key, store.ErrTooLarge, len(value), store.MaxValue)
		}
		op := clientv3.OpPut(k, string(value))
		if value == nil {
			op = clientv3.OpDelete(k)
		}
		t, err := s.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", rev)}, []clientv3.Op{op}, clientv3.OpGet(k))
		if err != nil {
			return s.fail("update "+key, err)
		}
		if t.Succeeded {
			return nil
		}
		resp = (*clientv3.GetResponse)(t.Responses[0].GetResponseRange())
	}
	return s.fail("update "+key, fmt.Errorf("%d writers came between the read and the write", maxRetries))
}

// Save implements store.State.
func (s *Store) Save(key string, value []byte) error {
	if key == "" {
		return errors.New("store: save: empty key")
	}
	if len(value) > store.MaxValue {
		return fmt.Errorf("store: save %s: %w: %d bytes, at most %d", key, store.ErrTooLarge, len(value), store.MaxValue)
	}
	ctx, cancel, err := s.call()
	if err != nil {
		return s.fail("save "+key, err)
	}
	defer cancel()
	k := s.prefix + "state/" + key
	if value == nil {
		err = s.remove(ctx, k)
	} else {
		err = s.put(ctx, k, value)
	}
	if err != nil {
		return s.fail("save "+key, err)
	}
	return nil
}
