package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/store"
)

// testUndecodedSchedule: a schedule record that does not decode is left
// out of the listings, which still list the others; Schedule names it in
// its error; DeleteSchedule removes it with its index entry, so that it
// no longer takes a place of the conversation's; SaveSchedule replaces
// it, in its conversation or another.
func testUndecodedSchedule(t *testing.T, open func() store.Store, b Backend) {
	s := open()
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	c, d := key("slack:T:C"), key("slack:T:D")
	for i, sc := range []store.Schedule{{ID: "good", Key: c}, {ID: "bad", Key: c}, {ID: "moved", Key: c}, {ID: "other", Key: d}} {
		sc.Prompt, sc.Spec, sc.Created = "p "+sc.ID, "@hourly", t0.Add(time.Duration(i)*time.Minute)
		if err := s.AddSchedule(sc, 0); err != nil {
			t.Fatal(err)
		}
	}
	closeStore(t, s)
	for _, id := range []string{"bad", "moved", "other"} {
		if err := b.PutScheduleRecord(id, []byte(`{"id": "`+id+`", "prompt": `)); err != nil {
			t.Fatal(err)
		}
	}
	s = open()
	list := func(when string, k store.Key, want ...string) {
		t.Helper()
		got, err := s.ConversationSchedules(k)
		if err != nil || !slices.Equal(ids(got), want) {
			t.Errorf("%s: schedules of %s = %v, %v; want %v", when, k, ids(got), err, want)
		}
	}
	all, err := s.AllSchedules()
	if err != nil || !slices.Equal(ids(all), []string{"good"}) {
		t.Errorf("all schedules with three records that do not decode = %v, %v; want good", ids(all), err)
	}
	list("damaged", c, "good")
	list("damaged", d)
	if _, _, err := s.Schedule("bad"); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "bad") {
		t.Errorf("Schedule(bad) = %v; want ErrCorrupt naming bad", err)
	}
	if _, err := s.UpdateSchedule("bad", func(*store.Schedule) bool { t.Error("fn called on a record that does not decode"); return true }); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("UpdateSchedule(bad) = %v; want ErrCorrupt", err)
	}

	if err := s.DeleteSchedule("bad"); err != nil {
		t.Fatalf("delete a record that does not decode: %v", err)
	}
	if _, found, err := s.Schedule("bad"); found || err != nil {
		t.Errorf("Schedule(bad) after its delete = %t, %v", found, err)
	}
	// Three entries in c were good, bad and moved: bad's is gone.
	if err := s.AddSchedule(store.Schedule{ID: "third", Key: c, Prompt: "p third", Created: t0.Add(time.Hour)}, 3); err != nil {
		t.Errorf("a third schedule of c with max 3, after the delete: %v (the deleted record's index entry stayed)", err)
	}
	for _, id := range []string{"moved", "other"} { // from c, and in d
		if err := s.SaveSchedule(store.Schedule{ID: id, Key: d, Prompt: "p " + id, Created: t0.Add(time.Hour)}); err != nil {
			t.Fatalf("save %s over a record that does not decode: %v", id, err)
		}
	}
	list("deleted and saved over", c, "good", "third")
	list("deleted and saved over", d, "moved", "other")
	closeStore(t, s)
	for _, e := range []struct {
		k     store.Key
		id    string
		there bool
	}{{c, "bad", false}, {c, "moved", false}, {d, "moved", true}, {d, "other", true}} {
		if _, found, err := b.ScheduleIndexEntry(e.k, e.id); err != nil || found != e.there {
			t.Errorf("the index entry of %s in %s is there: %t, %v; want %t", e.id, e.k, found, err, e.there)
		}
	}
	s = open()
	list("reopened", c, "good", "third")
	if err := s.DeleteSchedule("bad"); err != nil {
		t.Errorf("a second delete: %v", err)
	}
}

// testScheduleIndexEntryStays: a save, a firing or an update of a
// schedule that stays in its conversation writes its record alone, not
// its index entry; a move writes the new entry and deletes the old.
func testScheduleIndexEntryStays(t *testing.T, open func() store.Store, b Backend) {
	s := open()
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	c, d := key("slack:T:C"), key("slack:T:D")
	sc := store.Schedule{ID: "s", Key: c, Spec: "@hourly", Prompt: "p", Created: t0}
	if err := s.AddSchedule(sc, 0); err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)
	if err := b.PutScheduleIndexEntry(c, "s", []byte("mark")); err != nil {
		t.Fatal(err)
	}
	s = open()
	sc.Prompt = "changed"
	if err := s.SaveSchedule(sc); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := store.FireSchedule(s, "s", time.Time{}, t0.Add(time.Hour)); err != nil || !ok {
		t.Fatalf("fire: %t, %v", ok, err)
	}
	if _, err := s.UpdateSchedule("s", func(sc *store.Schedule) bool { sc.Paused = true; return true }); err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)
	if v, found, err := b.ScheduleIndexEntry(c, "s"); err != nil || !found || string(v) != "mark" {
		t.Errorf("the index entry after writes in the same conversation = %q, %t, %v; want the mark put before them (no write)", v, found, err)
	}
	s = open()
	got, _, err := s.Schedule("s")
	if err != nil || got.Prompt != "changed" || !got.Paused || !got.Fired.Equal(t0.Add(time.Hour)) {
		t.Errorf("the schedule after the writes = %+v, %v", got, err)
	}
	if l, err := s.ConversationSchedules(c); err != nil || !slices.Equal(ids(l), []string{"s"}) {
		t.Errorf("schedules of c = %v, %v", ids(l), err)
	}
	sc.Key = d
	if err := s.SaveSchedule(sc); err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)
	if _, found, err := b.ScheduleIndexEntry(c, "s"); err != nil || found {
		t.Errorf("the old entry after a move: there %t, %v", found, err)
	}
	if v, found, err := b.ScheduleIndexEntry(d, "s"); err != nil || !found || len(v) != 0 {
		t.Errorf("the new entry after a move = %q, %t, %v; want an empty one", v, found, err)
	}
}
