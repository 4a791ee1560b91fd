package store

import (
	"bytes"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Load returns the value saved under key, or nil and no error when there is
// none. The slice is the caller's own copy. Adapters namespace their keys
// ("telegram.offset"); Load and Save make *Bolt a core.StateStore.
func (s *Bolt) Load(key string) ([]byte, error) {
	var v []byte
	err := s.view(func(tx *bolt.Tx) error {
		if raw := tx.Bucket(bucketState).Get([]byte(key)); raw != nil {
			v = bytes.Clone(raw)
		}
		return nil
	})
	if err != nil {
		return nil, wrap("load "+key, err)
	}
	return v, nil
}

// Save stores value under key, replacing what was there; a nil value
// removes the key, so that Load then returns nil. The store keeps its own
// copy of value.
func (s *Bolt) Save(key string, value []byte) error {
	if key == "" {
		return errors.New("store: save: empty key")
	}
	if len(value) > MaxValue {
		return fmt.Errorf("store: save %s: %w: %d bytes, at most %d", key, ErrTooLarge, len(value), MaxValue)
	}
	err := s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketState)
		if value == nil {
			return b.Delete([]byte(key))
		}
		return b.Put([]byte(key), bytes.Clone(value))
	})
	if err != nil {
		return wrap("save "+key, err)
	}
	return nil
}

// UpdateState implements State: fn runs in one bbolt write transaction.
func (s *Bolt) UpdateState(key string, fn func(old []byte) ([]byte, bool)) error {
	if key == "" {
		return errors.New("store: update state: empty key")
	}
	err := s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketState)
		var old []byte
		if raw := b.Get([]byte(key)); raw != nil {
			old = bytes.Clone(raw)
		}
		value, write := fn(old)
		switch {
		case !write:
			return nil
		case value == nil:
			return b.Delete([]byte(key))
		case len(value) > MaxValue:
			return fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(value), MaxValue)
		}
		return b.Put([]byte(key), bytes.Clone(value))
	})
	if err != nil {
		return wrap("update "+key, err)
	}
	return nil
}
