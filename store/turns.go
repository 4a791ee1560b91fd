package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	bolt "go.etcd.io/bbolt"
)

// BeginTurn records t as in flight, or replaces the record with the same
// ID; call it again once the answer message exists so that a restart can
// mark that message interrupted.
func (s *Bolt) BeginTurn(t InFlight) error {
	if t.ID == "" {
		return errors.New("store: begin turn: empty id")
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return wrap("begin turn", err)
	}
	err = s.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTurns).Put([]byte(t.ID), raw)
	})
	if err != nil {
		return wrap("begin turn", err)
	}
	return nil
}

// EndTurn forgets the turn id; ending a turn that is not recorded is not an
// error.
func (s *Bolt) EndTurn(id string) error {
	if id == "" {
		return errors.New("store: end turn: empty id")
	}
	err := s.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTurns).Delete([]byte(id))
	})
	if err != nil {
		return wrap("end turn", err)
	}
	return nil
}

// InFlightTurns returns the turns begun and not ended, oldest first (by
// Started, then ID). At start-up these are the turns a crash or restart
// interrupted.
func (s *Bolt) InFlightTurns() ([]InFlight, error) {
	var turns []InFlight
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTurns).ForEach(func(k, v []byte) error {
			var t InFlight
			if err := json.Unmarshal(v, &t); err != nil {
				return fmt.Errorf("%w: turn %q: %w", ErrCorrupt, k, err)
			}
			turns = append(turns, t)
			return nil
		})
	})
	if err != nil {
		return nil, wrap("list turns in flight", err)
	}
	sort.SliceStable(turns, func(i, j int) bool {
		if !turns[i].Started.Equal(turns[j].Started) {
			return turns[i].Started.Before(turns[j].Started)
		}
		return turns[i].ID < turns[j].ID
	})
	return turns, nil
}
