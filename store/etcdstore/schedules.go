package etcdstore

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/golem-chat/golem/store"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func (s *Store) scheduleKey(id string) string { return s.prefix + "schedules/" + id }

// SaveSchedule implements store.Schedules.
func (s *Store) SaveSchedule(sc store.Schedule) error {
	if sc.ID == "" {
		return errors.New("store: save schedule: empty id")
	}
	return s.putJSON("save schedule", s.scheduleKey(sc.ID), sc)
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
	var sc store.Schedule
	if err := json.Unmarshal(resp.Kvs[0].Value, &sc); err != nil {
		return store.Schedule{}, false, s.fail("read schedule", fmt.Errorf("%w: schedule %q: %w", store.ErrCorrupt, id, err))
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
	ctx, cancel, err := s.call()
	if err != nil {
		return false, s.fail("update schedule", err)
	}
	defer cancel()
	k := s.scheduleKey(id)
	resp, err := s.cli.Get(ctx, k)
	for range maxRetries {
		if err != nil {
			return false, s.fail("update schedule", err)
		}
		if len(resp.Kvs) == 0 {
			return false, nil
		}
		kv := resp.Kvs[0]
		var sc store.Schedule
		if err := json.Unmarshal(kv.Value, &sc); err != nil {
			return true, s.fail("update schedule", fmt.Errorf("%w: schedule %q: %w", store.ErrCorrupt, id, err))
		}
		if !fn(&sc) {
			return true, nil
		}
		sc.ID = id
		raw, err := json.Marshal(sc)
		if err != nil {
			return true, s.fail("update schedule", err)
		}
		t, err := s.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", kv.ModRevision)},
			[]clientv3.Op{clientv3.OpPut(k, string(raw))}, clientv3.OpGet(k))
		if err != nil {
			return true, s.fail("update schedule", err)
		}
		if t.Succeeded {
			return true, nil
		}
		resp, err = (*clientv3.GetResponse)(t.Responses[0].GetResponseRange()), nil
	}
	return true, s.fail("update schedule", fmt.Errorf("%d writers came between the read and the write", maxRetries))
}

// DeleteSchedule implements store.Schedules.
func (s *Store) DeleteSchedule(id string) error {
	if id == "" {
		return errors.New("store: delete schedule: empty id")
	}
	ctx, cancel, err := s.call()
	if err != nil {
		return s.fail("delete schedule", err)
	}
	defer cancel()
	if err := s.remove(ctx, s.scheduleKey(id)); err != nil {
		return s.fail("delete schedule", err)
	}
	return nil
}

// AllSchedules implements store.Schedules, in one range read.
func (s *Store) AllSchedules() ([]store.Schedule, error) {
	all, err := list[store.Schedule](s, "schedules/")
	if err != nil {
		return nil, s.fail("read schedules", err)
	}
	store.SortSchedules(all)
	return all, nil
}
