package store

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Schedule is a prompt that runs on a schedule as a turn of the
// conversation where it was set, as the person who set it (package
// schedule owns what the fields mean; the store keeps them).
type Schedule struct {
	ID string `json:"id"` // short, shown in code in every answer
	// Key is the conversation its runs are turns of; Platform, Workspace,
	// Channel and Thread are where it was set, where its answers go.
	Key       Key    `json:"key"`
	Platform  string `json:"platform"`
	Workspace string `json:"workspace,omitempty"`
	Channel   string `json:"channel"`
	Thread    string `json:"thread,omitempty"`
	// User set it: each run is theirs (access, budgets, usage).
	User     string `json:"user"`
	UserName string `json:"user_name,omitempty"`
	Name     string `json:"name,omitempty"` // shown on each answer's first line; "" = the id

	Spec     string    `json:"spec,omitempty"` // a cron expression, descriptor or @every; "" for a once
	At       time.Time `json:"at,omitzero"`    // a once's instant
	TZ       string    `json:"tz,omitempty"`   // IANA zone; "" = schedules.timezone
	Prompt   string    `json:"prompt"`
	Continue bool      `json:"continue,omitempty"` // in the conversation's agent session, not a fresh one
	Paused   bool      `json:"paused,omitempty"`
	Operator bool      `json:"operator,omitempty"` // declared in bot.yaml: not deleted from the chat
	Created  time.Time `json:"created"`

	// Fired is the instant of the last run fired (zero: none yet). It only
	// moves forward, by FireSchedule's compare, so that each instant fires
	// once however many replicas try.
	Fired time.Time `json:"fired,omitzero"`
	// LastRun is when the last run ended and LastOutcome how ("done",
	// "failed", "skipped_busy", ...); Failures counts the failed runs in a
	// row.
	LastRun     time.Time `json:"last_run,omitzero"`
	LastOutcome string    `json:"last_outcome,omitempty"`
	Failures    int       `json:"failures,omitempty"`
	// Missed is an instant skipped because golem was down past the
	// catch-up window, told with the next run (zero: none).
	Missed time.Time `json:"missed,omitzero"`
	// RunNow asks the loop, wherever it runs, for a run at once (/runnow);
	// it clears the flag with a compare, so that one replica runs it.
	RunNow bool `json:"run_now,omitempty"`
	// Retry is when a failed run is tried again (zero: none); cleared
	// with a compare as RunNow is.
	Retry time.Time `json:"retry,omitzero"`
}

// Schedules are the scheduled prompts. Each backend indexes them by
// conversation, so that counting and listing one conversation's reads only
// its own, however many the store holds.
//
// A record that does not decode (damaged bytes) fails Schedule and
// UpdateSchedule with an error wrapping ErrCorrupt that names its id; the
// listings leave it out and log its id at warn level, so that one such
// record never stops the others from firing or being listed; SaveSchedule
// replaces it and DeleteSchedule removes it, with its index entry.
type Schedules interface {
	// AddSchedule stores sc, a new schedule, if no schedule has its ID
	// (else ErrScheduleExists) and its conversation has fewer than max
	// (else ErrScheduleLimit; max <= 0: no limit). The check and the write
	// are one atomic step: of concurrent adds to one conversation, on any
	// replica, at most max are ever stored.
	AddSchedule(sc Schedule, max int) error
	// SaveSchedule stores s under s.ID, replacing what was there (in
	// whichever conversation it was). The conversation's index entry is
	// written only when s is new there: a save in the same conversation
	// writes the record alone.
	SaveSchedule(s Schedule) error
	// Schedule returns the schedule id, and false when there is none.
	Schedule(id string) (Schedule, bool, error)
	// UpdateSchedule changes the schedule id atomically: fn gets the
	// stored schedule and reports whether to save it, so that concurrent
	// updates (on any replica) never undo each other. fn may run more than
	// once and must not block. found is false, and fn is not called, when
	// there is no schedule id.
	UpdateSchedule(id string, fn func(s *Schedule) bool) (found bool, err error)
	// DeleteSchedule forgets the schedule id, a record that does not
	// decode too; deleting one not stored is not an error.
	DeleteSchedule(id string) error
	// AllSchedules returns every schedule, by conversation key, then
	// Created, then ID; those whose record does not decode are left out
	// (logged).
	AllSchedules() ([]Schedule, error)
	// ConversationSchedules returns key's schedules, by Created, then ID,
	// reading only them; those whose record does not decode are left out
	// (logged).
	ConversationSchedules(key Key) ([]Schedule, error)
}

// ErrScheduleExists is AddSchedule's error for an id that is taken.
var ErrScheduleExists = errors.New("store: a schedule has that id")

// ErrScheduleLimit is AddSchedule's error for a conversation that has its
// most schedules already.
var ErrScheduleLimit = errors.New("store: the conversation has the most schedules it may have")

// FireSchedule records that the schedule id fires at the instant at, if
// its last fired instant is still prev, and returns the schedule as it now
// is: of many concurrent calls with the same prev (replicas racing for one
// run) exactly one gets true, and only that one may run it. false with no
// error: another fired it, or the schedule is gone.
func FireSchedule(s Schedules, id string, prev, at time.Time) (Schedule, bool, error) {
	fired := false
	var now Schedule
	_, err := s.UpdateSchedule(id, func(sc *Schedule) bool {
		fired = sc.Fired.Equal(prev) && at.After(sc.Fired)
		if fired {
			sc.Fired = at
			now = *sc
		}
		return fired
	})
	if err != nil || !fired {
		return Schedule{}, false, err
	}
	return now, true, nil
}

// SortSchedules puts s in the order AllSchedules returns: by conversation
// key (its parts in turn), then Created, then ID.
func SortSchedules(s []Schedule) {
	slices.SortFunc(s, func(a, b Schedule) int {
		ka, kb := a.Key, b.Key
		return cmp.Or(cmp.Compare(ka.Platform, kb.Platform), cmp.Compare(ka.Workspace, kb.Workspace), cmp.Compare(ka.Channel, kb.Channel),
			cmp.Compare(ka.Sub, kb.Sub), a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
	})
}

// bucketSchedules holds the schedules (schema version 4): id -> Schedule
// JSON; bucketScheduleKeys indexes them by conversation (version 6):
// keyPrefix(key) + id -> empty.
var (
	bucketSchedules    = []byte("schedules")
	bucketScheduleKeys = []byte("schedule_keys")
)

// createSchedules adds the schedules' bucket.
func createSchedules(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketSchedules); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketSchedules, err)
	}
	return nil
}

// createScheduleKeys adds the index by conversation, of the schedules
// stored so far too.
func createScheduleKeys(tx *bolt.Tx) error {
	idx, err := tx.CreateBucketIfNotExists(bucketScheduleKeys)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketScheduleKeys, err)
	}
	return tx.Bucket(bucketSchedules).ForEach(func(id, raw []byte) error {
		sc, err := decodeSchedule(id, raw)
		if err != nil {
			return err
		}
		return idx.Put(scheduleKey(sc.Key, string(id)), nil)
	})
}

// scheduleKey is the index entry of the schedule id in key.
func scheduleKey(key Key, id string) []byte { return append(keyPrefix(key), id...) }

func decodeSchedule(id, raw []byte) (Schedule, error) {
	var sc Schedule
	if err := json.Unmarshal(raw, &sc); err != nil {
		return Schedule{}, fmt.Errorf("%w: schedule %q: %w", ErrCorrupt, id, err)
	}
	return sc, nil
}

// logUndecoded logs the record of the schedule id, which a listing leaves
// out because it does not decode, for the operator to delete.
func logUndecoded(id string, err error) {
	slog.Warn("store: a schedule record does not decode; left out of the listing", "schedule", id, "err", err)
}

// putSchedule writes sc in tx, and its index entry when sc is new in its
// conversation: moved from the old one, or found by a scan of the index
// when the record it replaces does not decode.
func putSchedule(tx *bolt.Tx, sc Schedule) error {
	raw, err := json.Marshal(sc)
	if err != nil {
		return err
	}
	b, idx := tx.Bucket(bucketSchedules), tx.Bucket(bucketScheduleKeys)
	if old := b.Get([]byte(sc.ID)); old != nil {
		was, err := decodeSchedule([]byte(sc.ID), old)
		switch {
		case err != nil:
			err = deleteScheduleEntries(idx, sc.ID)
		case was.Key == sc.Key: // its entry stands
			return b.Put([]byte(sc.ID), raw)
		default:
			err = idx.Delete(scheduleKey(was.Key, sc.ID))
		}
		if err != nil {
			return err
		}
	}
	if err := idx.Put(scheduleKey(sc.Key, sc.ID), nil); err != nil {
		return err
	}
	return b.Put([]byte(sc.ID), raw)
}

// deleteScheduleEntries deletes the index entries of the schedule id in
// any conversation, for a record that does not decode and so does not
// tell its conversation. It reads the whole index.
func deleteScheduleEntries(idx *bolt.Bucket, id string) error {
	var entries [][]byte
	err := idx.ForEach(func(k, _ []byte) error {
		n, w := binary.Uvarint(k) // keyPrefix: the key's length, the key, then the id
		if w > 0 && n <= uint64(len(k)-w) && string(k[w+int(n):]) == id {
			entries = append(entries, bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range entries {
		if err := idx.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// AddSchedule implements Schedules, in one transaction.
func (s *Bolt) AddSchedule(sc Schedule, max int) error {
	if sc.ID == "" {
		return errors.New("store: add schedule: empty id")
	}
	var refused error
	err := s.update(func(tx *bolt.Tx) error {
		refused = nil
		if tx.Bucket(bucketSchedules).Get([]byte(sc.ID)) != nil {
			refused = ErrScheduleExists
			return nil
		}
		if max > 0 {
			n, prefix := 0, keyPrefix(sc.Key)
			c := tx.Bucket(bucketScheduleKeys).Cursor()
			for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && n < max; k, _ = c.Next() {
				n++
			}
			if n >= max {
				refused = ErrScheduleLimit
				return nil
			}
		}
		return putSchedule(tx, sc)
	})
	if err != nil {
		return wrap("add schedule", err)
	}
	return refused
}

// SaveSchedule implements Schedules.
func (s *Bolt) SaveSchedule(sc Schedule) error {
	if sc.ID == "" {
		return errors.New("store: save schedule: empty id")
	}
	if err := s.update(func(tx *bolt.Tx) error { return putSchedule(tx, sc) }); err != nil {
		return wrap("save schedule", err)
	}
	return nil
}

// Schedule implements Schedules.
func (s *Bolt) Schedule(id string) (Schedule, bool, error) {
	var sc Schedule
	found := false
	err := s.view(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucketSchedules).Get([]byte(id))
		if raw == nil {
			return nil
		}
		found = true
		var err error
		sc, err = decodeSchedule([]byte(id), raw)
		return err
	})
	if err != nil {
		return Schedule{}, false, wrap("read schedule", err)
	}
	return sc, found, nil
}

// UpdateSchedule implements Schedules, in one transaction.
func (s *Bolt) UpdateSchedule(id string, fn func(sc *Schedule) bool) (bool, error) {
	if id == "" {
		return false, errors.New("store: update schedule: empty id")
	}
	var found bool
	err := s.update(func(tx *bolt.Tx) error {
		found = false
		raw := tx.Bucket(bucketSchedules).Get([]byte(id))
		if raw == nil {
			return nil
		}
		found = true
		sc, err := decodeSchedule([]byte(id), raw)
		if err != nil {
			return err
		}
		if !fn(&sc) {
			return nil
		}
		sc.ID = id
		return putSchedule(tx, sc)
	})
	if err != nil {
		return false, wrap("update schedule", err)
	}
	return found, nil
}

// DeleteSchedule implements Schedules.
func (s *Bolt) DeleteSchedule(id string) error {
	if id == "" {
		return errors.New("store: delete schedule: empty id")
	}
	err := s.update(func(tx *bolt.Tx) error {
		b, idx := tx.Bucket(bucketSchedules), tx.Bucket(bucketScheduleKeys)
		raw := b.Get([]byte(id))
		if raw == nil {
			return nil
		}
		sc, err := decodeSchedule([]byte(id), raw)
		if err == nil {
			err = idx.Delete(scheduleKey(sc.Key, id))
		} else { // its conversation is unknown
			err = deleteScheduleEntries(idx, id)
		}
		if err != nil {
			return err
		}
		return b.Delete([]byte(id))
	})
	if err != nil {
		return wrap("delete schedule", err)
	}
	return nil
}

// AllSchedules implements Schedules.
func (s *Bolt) AllSchedules() ([]Schedule, error) {
	var out []Schedule
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSchedules).ForEach(func(k, v []byte) error {
			if sc, err := decodeSchedule(k, v); err == nil {
				out = append(out, sc)
			} else {
				logUndecoded(string(k), err)
			}
			return nil
		})
	})
	if err != nil {
		return nil, wrap("read schedules", err)
	}
	SortSchedules(out)
	return out, nil
}

// ConversationSchedules implements Schedules: a seek in the index, then
// one read per schedule of key.
func (s *Bolt) ConversationSchedules(key Key) ([]Schedule, error) {
	var out []Schedule
	err := s.view(func(tx *bolt.Tx) error {
		b, prefix := tx.Bucket(bucketSchedules), keyPrefix(key)
		c := tx.Bucket(bucketScheduleKeys).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			id := k[len(prefix):]
			raw := b.Get(id)
			if raw == nil {
				return fmt.Errorf("%w: the index names schedule %q, which is not there", ErrCorrupt, id)
			}
			if sc, err := decodeSchedule(id, raw); err == nil {
				out = append(out, sc)
			} else {
				logUndecoded(string(id), err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap("read a conversation's schedules", err)
	}
	SortSchedules(out)
	return out, nil
}
