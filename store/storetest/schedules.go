package storetest

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golem-chat/golem/store"
)

func testSchedules(t *testing.T, open func() store.Store) {
	s := open()
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	daily := store.Schedule{ID: "a1b2", Key: key("slack:T:C"), Platform: "slack", Workspace: "T", Channel: "C", Thread: "1.0",
		User: "U1", UserName: "ann", Name: "daily-build", Spec: "0 9 * * 1-5", TZ: "Europe/Berlin", Prompt: "check the nightly build",
		Continue: true, Created: t0}
	once := store.Schedule{ID: "c3d4", Key: key("slack:T:C"), Platform: "slack", Channel: "C", User: "U1", At: t0.Add(time.Hour),
		Prompt: "remind me", Created: t0.Add(-time.Minute)}
	other := store.Schedule{ID: "0000", Key: key("telegram::42"), Platform: "telegram", Channel: "42", User: "7", Spec: "@hourly",
		Prompt: "p", Operator: true, Created: t0}
	for _, sc := range []store.Schedule{daily, once, other} {
		if err := s.SaveSchedule(sc); err != nil {
			t.Fatal(err)
		}
	}
	found, err := s.UpdateSchedule("a1b2", func(sc *store.Schedule) bool {
		if sc.Prompt != daily.Prompt {
			t.Errorf("fn got %+v, want the stored schedule", sc)
		}
		sc.Paused, sc.LastRun, sc.LastOutcome, sc.Failures, sc.Retry = true, t0.Add(time.Minute), "failed", 2, t0.Add(3*time.Minute)
		return true
	})
	if err != nil || !found {
		t.Fatalf("update = %t, %v", found, err)
	}
	daily.Paused, daily.LastRun, daily.LastOutcome, daily.Failures, daily.Retry = true, t0.Add(time.Minute), "failed", 2, t0.Add(3*time.Minute)
	if found, err := s.UpdateSchedule("none", func(*store.Schedule) bool { t.Error("fn called for an absent schedule"); return true }); err != nil || found {
		t.Errorf("update of an absent schedule = %t, %v; want false, nil", found, err)
	}
	if _, found, _ := s.Schedule("none"); found {
		t.Error("an update of an absent schedule stored one")
	}
	closeStore(t, s)
	s = open()
	got, err := s.AllSchedules()
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Schedule{once, daily, other} // by key, then created
	if len(got) != len(want) {
		t.Fatalf("got %d schedules %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if !sameSchedule(got[i], want[i]) {
			t.Errorf("schedule %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if sc, found, err := s.Schedule("a1b2"); err != nil || !found || !sameSchedule(sc, daily) {
		t.Errorf("Schedule(a1b2) = %+v, %t, %v", sc, found, err)
	}
	for _, id := range []string{"c3d4", "c3d4", "none"} { // deleting twice is fine
		if err := s.DeleteSchedule(id); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.AllSchedules(); len(got) != 2 {
		t.Errorf("after a delete: %+v", got)
	}
}

func sameSchedule(a, b store.Schedule) bool {
	times := func(s *store.Schedule) []time.Time {
		ts := []time.Time{s.At, s.Created, s.Fired, s.LastRun, s.Missed, s.Retry}
		s.At, s.Created, s.Fired, s.LastRun, s.Missed, s.Retry = time.Time{}, time.Time{}, time.Time{}, time.Time{}, time.Time{}, time.Time{}
		return ts
	}
	ta, tb := times(&a), times(&b)
	for i := range ta {
		if !ta[i].Equal(tb[i]) {
			return false
		}
	}
	return a == b
}

// testFireSchedule races replicas for each instant of a schedule: exactly
// one fires it, and a stale or repeated instant fires nothing.
func testFireSchedule(t *testing.T, open func() store.Store) {
	s := open()
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	if err := s.SaveSchedule(store.Schedule{ID: "s", Key: key("slack:T:C"), Spec: "@every 1m", Prompt: "p", Created: t0}); err != nil {
		t.Fatal(err)
	}
	const racers = 8
	prev := time.Time{}
	for round := range 3 {
		at := t0.Add(time.Duration(round+1) * time.Minute)
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range racers {
			wg.Go(func() {
				sc, ok, err := store.FireSchedule(s, "s", prev, at)
				if err != nil {
					t.Error(err)
				}
				if ok {
					wins.Add(1)
					if !sc.Fired.Equal(at) || sc.Prompt != "p" {
						t.Errorf("the firing returned %+v", sc)
					}
				}
			})
		}
		wg.Wait()
		if n := wins.Load(); n != 1 {
			t.Fatalf("round %d: %d of %d racers fired %v, want one", round, n, racers, at)
		}
		if _, ok, err := store.FireSchedule(s, "s", prev, at); err != nil || ok {
			t.Errorf("round %d: firing again from the stale instant = %t, %v", round, ok, err)
		}
		if _, ok, _ := store.FireSchedule(s, "s", at, at); ok {
			t.Errorf("round %d: the same instant fired twice", round)
		}
		prev = at
	}
	closeStore(t, s)
	s = open()
	if sc, _, err := s.Schedule("s"); err != nil || !sc.Fired.Equal(prev) {
		t.Errorf("after reopen Fired = %v, %v; want %v", sc.Fired, err, prev)
	}
	if _, ok, err := store.FireSchedule(s, "gone", time.Time{}, t0); err != nil || ok {
		t.Errorf("firing an absent schedule = %t, %v; want false, nil", ok, err)
	}
}
