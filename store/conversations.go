package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// convRecord is a Conversation as stored: short JSON names, empty fields
// left out, the key only in the bucket key and the time in unix
// nanoseconds, so a typical record is well under 100 bytes.
type convRecord struct {
	Engine    string   `json:"e,omitempty"`
	Model     string   `json:"m,omitempty"`
	SessionID string   `json:"s,omitempty"`
	LastUsed  int64    `json:"u,omitempty"` // unix ns; 0 = never
	Sessions  []string `json:"ss,omitempty"`
}

func encodeConversation(c Conversation) ([]byte, error) {
	r := convRecord{Engine: c.Engine, Model: c.Model, SessionID: c.SessionID, Sessions: c.Sessions}
	if !c.LastUsed.IsZero() {
		r.LastUsed = c.LastUsed.UnixNano()
	}
	return json.Marshal(r)
}

func decodeConversation(key Key, raw []byte) (Conversation, error) {
	var r convRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return Conversation{}, fmt.Errorf("%w: conversation %q: %w", ErrCorrupt, key, err)
	}
	c := Conversation{Key: key, Engine: r.Engine, Model: r.Model, SessionID: r.SessionID, Sessions: r.Sessions}
	if r.LastUsed != 0 {
		c.LastUsed = time.Unix(0, r.LastUsed)
	}
	return c, nil
}

// Conversation returns what is stored for key, or a Conversation with only
// Key set when nothing is.
func (s *Bolt) Conversation(key Key) (Conversation, error) {
	c := Conversation{Key: key}
	err := s.view(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucketConversations).Get([]byte(key.String()))
		if raw == nil {
			return nil
		}
		var err error
		c, err = decodeConversation(key, raw)
		return err
	})
	if err != nil {
		return Conversation{Key: key}, wrap("read conversation", err)
	}
	return c, nil
}

// SaveConversation stores c under c.Key, replacing what was there. A zero
// LastUsed is stored as the current time, so saving after a turn marks the
// conversation used.
func (s *Bolt) SaveConversation(c Conversation) error {
	if c.Key.IsZero() {
		return errors.New("store: save conversation: empty key")
	}
	if c.LastUsed.IsZero() {
		c.LastUsed = s.now()
	}
	raw, err := encodeConversation(c)
	if err != nil {
		return wrap("save conversation", err)
	}
	err = s.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketConversations).Put([]byte(c.Key.String()), raw)
	})
	if err != nil {
		return wrap("save conversation", err)
	}
	return nil
}

// UpdateConversation changes what is stored for key in one transaction: fn
// gets the stored conversation (only Key set when nothing is) and reports
// whether to save it. Unlike Conversation followed by SaveConversation,
// concurrent updates of different fields never undo each other. fn may run
// more than once and must not block; a zero LastUsed is saved as the
// current time.
func (s *Bolt) UpdateConversation(key Key, fn func(c *Conversation) bool) error {
	if key.IsZero() {
		return errors.New("store: update conversation: empty key")
	}
	if err := s.update(func(tx *bolt.Tx) error { return s.updateConversation(tx, key, fn) }); err != nil {
		return wrap("update conversation", err)
	}
	return nil
}

// updateConversation is UpdateConversation within tx.
func (s *Bolt) updateConversation(tx *bolt.Tx, key Key, fn func(c *Conversation) bool) error {
	name := []byte(key.String())
	b := tx.Bucket(bucketConversations)
	c := Conversation{Key: key}
	if raw := b.Get(name); raw != nil {
		var err error
		if c, err = decodeConversation(key, raw); err != nil {
			return err
		}
	}
	if !fn(&c) {
		return nil
	}
	if c.LastUsed.IsZero() {
		c.LastUsed = s.now()
	}
	raw, err := encodeConversation(c)
	if err != nil {
		return err
	}
	return b.Put(name, raw)
}

// ClearSession forgets the session id of key so the next turn starts a new
// agent session; the engine and model chosen for the conversation stay. A
// key with nothing stored is left alone.
func (s *Bolt) ClearSession(key Key) error {
	return s.UpdateConversation(key, func(c *Conversation) bool {
		if c.SessionID == "" {
			return false // also when nothing is stored
		}
		c.SessionID = ""
		return true
	})
}
