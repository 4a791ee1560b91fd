package storetest

import (
	"errors"
	"fmt"
	"slices"
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

// ids are the ids of s, in order.
func ids(s []store.Schedule) []string {
	out := make([]string, len(s))
	for i, sc := range s {
		out[i] = sc.ID
	}
	return out
}

// testScheduleIndex: a conversation's schedules are counted and listed
// right across adds, refusals, firings, moves, deletes and a reopen, and
// never with a neighbour's (keys that are prefixes of each other, a slash
// in a channel).
func testScheduleIndex(t *testing.T, open func() store.Store) {
	s := open()
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	a, a1, slash := key("slack:T:C"), key("slack:T:C1"), key("slack:T:C/1")
	add := func(id string, k store.Key, created time.Time, max int) error {
		return s.AddSchedule(store.Schedule{ID: id, Key: k, Platform: k.Platform, Channel: k.Channel, User: "U", Spec: "@hourly",
			Prompt: "p " + id, Created: created}, max)
	}
	list := func(when string, k store.Key, want ...string) {
		t.Helper()
		got, err := s.ConversationSchedules(k)
		if err != nil {
			t.Fatalf("%s: schedules of %s: %v", when, k, err)
		}
		if !slices.Equal(ids(got), want) {
			t.Errorf("%s: schedules of %s = %v, want %v", when, k, ids(got), want)
		}
		for _, sc := range got {
			if sc.Key != k || sc.Prompt != "p "+sc.ID {
				t.Errorf("%s: %s listed %+v", when, k, sc)
			}
		}
	}
	for i, id := range []string{"s3", "s1", "s2"} { // by Created, then id
		if err := add(id, a, t0.Add(time.Duration(i%2)*time.Minute), 3); err != nil {
			t.Fatalf("add %s: %v", id, err)
		}
	}
	for _, id := range []string{"n1", "n2"} {
		if err := add(id, a1, t0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := add("x1", slash, t0, 1); err != nil {
		t.Fatal(err)
	}
	list("added", a, "s2", "s3", "s1")
	list("added", a1, "n1", "n2")
	list("added", slash, "x1")
	list("added", key("slack:T:D"))
	if err := add("s4", a, t0, 3); !errors.Is(err, store.ErrScheduleLimit) {
		t.Errorf("a fourth schedule with max 3: %v, want ErrScheduleLimit", err)
	}
	if err := add("n1", a, t0, 10); !errors.Is(err, store.ErrScheduleExists) {
		t.Errorf("an id taken in another conversation: %v, want ErrScheduleExists", err)
	}
	if sc, _, _ := s.Schedule("n1"); sc.Key != a1 {
		t.Errorf("a refused add changed the schedule there: %+v", sc)
	}
	list("refused", a, "s2", "s3", "s1")
	list("refused", a1, "n1", "n2")

	// Firing and updating leave the count; a delete frees a place.
	if _, ok, err := store.FireSchedule(s, "s1", time.Time{}, t0.Add(time.Hour)); err != nil || !ok {
		t.Fatalf("fire s1: %t, %v", ok, err)
	}
	list("fired", a, "s2", "s3", "s1")
	if err := add("s4", a, t0, 3); !errors.Is(err, store.ErrScheduleLimit) {
		t.Errorf("after a firing, a fourth with max 3: %v", err)
	}
	if err := s.DeleteSchedule("s3"); err != nil {
		t.Fatal(err)
	}
	list("deleted", a, "s2", "s1")
	if err := add("s4", a, t0.Add(2*time.Minute), 3); err != nil {
		t.Errorf("after a delete, a third with max 3: %v", err)
	}
	list("deleted and added", a, "s2", "s1", "s4")

	// A schedule saved or updated into another conversation moves there.
	n1, _, _ := s.Schedule("n1")
	n1.Key = slash
	if err := s.SaveSchedule(n1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateSchedule("n2", func(sc *store.Schedule) bool { sc.Key = slash; return true }); err != nil {
		t.Fatal(err)
	}
	list("moved", a1)
	list("moved", slash, "n1", "n2", "x1")
	if err := s.SaveSchedule(store.Schedule{ID: "o1", Key: a1, Prompt: "p o1", Operator: true, Created: t0}); err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)
	s = open()
	list("reopened", a, "s2", "s1", "s4")
	list("reopened", a1, "o1")
	list("reopened", slash, "n1", "n2", "x1")
	if all, err := s.AllSchedules(); err != nil || len(all) != 7 {
		t.Errorf("all schedules = %v, %v; want 7", ids(all), err)
	}
	if sc, _, _ := s.Schedule("s1"); !sc.Fired.Equal(t0.Add(time.Hour)) {
		t.Errorf("s1 after reopen: %+v", sc)
	}
}

// testAddScheduleConcurrent races adds to one conversation: however many
// come at once, the conversation never has more than max, and of adds of
// one id exactly one is stored.
func testAddScheduleConcurrent(t *testing.T, open func() store.Store) {
	s := open()
	k := key("slack:T:C")
	const racers, max = 12, 5
	var added, full atomic.Int32
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			err := s.AddSchedule(store.Schedule{ID: fmt.Sprint("r", i), Key: k, Prompt: "p", Spec: "@hourly"}, max)
			switch {
			case err == nil:
				added.Add(1)
			case errors.Is(err, store.ErrScheduleLimit):
				full.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := s.ConversationSchedules(k)
	if err != nil {
		t.Fatal(err)
	}
	if added.Load() != max || full.Load() != racers-max || len(got) != max {
		t.Errorf("%d adds stored, %d refused, %d listed; want %d, %d, %d", added.Load(), full.Load(), len(got), max, racers-max, max)
	}
	var won atomic.Int32
	for i := range racers {
		wg.Go(func() {
			other := store.NewKey("slack", "T", fmt.Sprint("D", i), "")
			switch err := s.AddSchedule(store.Schedule{ID: "same", Key: other, Prompt: "p"}, max); {
			case err == nil:
				won.Add(1)
			case !errors.Is(err, store.ErrScheduleExists):
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Errorf("an id added in %d conversations at once, want one", won.Load())
	}
	sc, _, _ := s.Schedule("same")
	if got, _ := s.ConversationSchedules(sc.Key); len(got) != 1 {
		t.Errorf("the winner's conversation lists %v", ids(got))
	}
}
