package store

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
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

// Schedules are the scheduled prompts.
type Schedules interface {
	// SaveSchedule stores s under s.ID, replacing what was there.
	SaveSchedule(s Schedule) error
	// Schedule returns the schedule id, and false when there is none.
	Schedule(id string) (Schedule, bool, error)
	// UpdateSchedule changes the schedule id atomically: fn gets the
	// stored schedule and reports whether to save it, so that concurrent
	// updates (on any replica) never undo each other. fn may run more than
	// once and must not block. found is false, and fn is not called, when
	// there is no schedule id.
	UpdateSchedule(id string, fn func(s *Schedule) bool) (found bool, err error)
	// DeleteSchedule forgets the schedule id; deleting one not stored is
	// not an error.
	DeleteSchedule(id string) error
	// AllSchedules returns every schedule, by conversation key, then
	// Created, then ID.
	AllSchedules() ([]Schedule, error)
}

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
// JSON.
var bucketSchedules = []byte("schedules")

// createSchedules adds the schedules' bucket.
func createSchedules(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketSchedules); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketSchedules, err)
	}
	return nil
}

func decodeSchedule(id, raw []byte) (Schedule, error) {
	var sc Schedule
	if err := json.Unmarshal(raw, &sc); err != nil {
		return Schedule{}, fmt.Errorf("%w: schedule %q: %w", ErrCorrupt, id, err)
	}
	return sc, nil
}

// SaveSchedule implements Schedules.
func (s *Bolt) SaveSchedule(sc Schedule) error {
	if sc.ID == "" {
		return errors.New("store: save schedule: empty id")
	}
	raw, err := json.Marshal(sc)
	if err != nil {
		return wrap("save schedule", err)
	}
	if err := s.update(func(tx *bolt.Tx) error { return tx.Bucket(bucketSchedules).Put([]byte(sc.ID), raw) }); err != nil {
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
		b := tx.Bucket(bucketSchedules)
		raw := b.Get([]byte(id))
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
		if raw, err = json.Marshal(sc); err != nil {
			return err
		}
		return b.Put([]byte(id), raw)
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
	if err := s.update(func(tx *bolt.Tx) error { return tx.Bucket(bucketSchedules).Delete([]byte(id)) }); err != nil {
		return wrap("delete schedule", err)
	}
	return nil
}

// AllSchedules implements Schedules.
func (s *Bolt) AllSchedules() ([]Schedule, error) {
	var out []Schedule
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSchedules).ForEach(func(k, v []byte) error {
			sc, err := decodeSchedule(k, v)
			if err == nil {
				out = append(out, sc)
			}
			return err
		})
	})
	if err != nil {
		return nil, wrap("read schedules", err)
	}
	SortSchedules(out)
	return out, nil
}
