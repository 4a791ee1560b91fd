package store

import (
	"errors"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TurnEnd is what a finished turn leaves in the store, written at once by
// FinishTurn: the session it ended in, what it used and its record for
// the operator's view. Each part is optional.
type TurnEnd struct {
	Key Key // the turn's conversation
	// Session changes the conversation's record as UpdateConversation's fn
	// does, reporting whether to save it; nil leaves the record alone. It
	// may run more than once and must not block.
	Session func(c *Conversation) bool
	// Usage, when not nil, is added to the totals of Key and User at At,
	// as AddUsage adds it.
	Usage *Usage
	User  string
	At    time.Time
	// Record, when not nil, is kept as RecordTurn keeps it.
	Record *TurnRecord
}

// FinishTurn implements Turns: one write transaction (one group commit's
// share) for the three parts.
func (s *Bolt) FinishTurn(e TurnEnd) error {
	if e.Key.IsZero() {
		return errors.New("store: finish turn: empty key")
	}
	var record []byte
	if e.Record != nil {
		var err error
		if record, err = encodeTurnRecord(*e.Record); err != nil {
			return wrap("finish turn", err)
		}
	}
	err := s.update(func(tx *bolt.Tx) error {
		if e.Session != nil {
			if err := s.updateConversation(tx, e.Key, e.Session); err != nil {
				return err
			}
		}
		if e.Usage != nil {
			if err := addUsage(tx, e.Key, e.User, e.At, *e.Usage); err != nil {
				return err
			}
		}
		if e.Record != nil {
			return recordTurn(tx, *e.Record, record)
		}
		return nil
	})
	if err != nil {
		return wrap("finish turn", err)
	}
	return nil
}
