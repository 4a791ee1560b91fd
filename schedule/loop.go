package schedule

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/store"
)

// onTime is how late the loop may fire an instant and still call it on
// time (its own delay, a slow store), whatever CatchUp says: only a run
// later than both was missed.
const onTime = time.Minute

// entry is one schedule as the loop holds it.
type entry struct {
	sc   store.Schedule
	spec Spec
	next time.Time // its next instant; zero: none (a once that fired)
}

func (b *Book) entryOf(sc store.Schedule) (*entry, error) {
	spec, err := b.specOf(sc)
	if err != nil {
		return nil, err
	}
	base := sc.Fired
	if base.IsZero() {
		base = sc.Created
	}
	return &entry{sc: sc, spec: spec, next: spec.Next(base)}, nil
}

// Run fires the schedules until ctx ends, then waits for the runs it
// started to end (their turns end with the dispatcher's Close; ctx ending
// only gives up a run still waiting for a busy conversation). Run it on
// one replica at a time (cluster.Replica.Lead("schedules")); should two
// overlap as the leadership moves, each instant still fires once
// (store.FireSchedule).
//
// Each instant fires when the clock reaches it. One missed (golem was
// down, or the loop was elsewhere) fires at once if it is at most CatchUp
// old, else it is skipped and the next run says so; of several missed,
// only the latest counts. A run waits for a busy conversation up to
// BusyWait and is then skipped; MaxFailures failed runs in a row pause the
// schedule, as does its person losing access, each with a note in its
// conversation.
func (b *Book) Run(ctx context.Context) {
	defer b.runs.Wait()
	entries := b.load(nil)
	marker, _ := b.opts.Store.Load(changedKey)
	check := b.clock.Now().Add(b.opts.Resync)
	for {
		now := b.clock.Now()
		wake := check
		for _, e := range entries {
			b.visit(ctx, e, now)
			if !e.sc.Paused && !e.next.IsZero() && e.next.Before(wake) {
				wake = e.next
			}
			if !e.sc.Paused && !e.sc.Retry.IsZero() && e.sc.Retry.Before(wake) {
				wake = e.sc.Retry
			}
		}
		timer := b.clock.NewTimer(wake.Sub(now))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-b.wake:
			entries = b.load(nil)
		case <-b.stale:
			b.mu.Lock()
			ids := b.dirty
			b.dirty = map[string]bool{}
			b.mu.Unlock()
			entries = b.load(entries, ids)
		case <-timer.Chan():
		}
		timer.Stop()
		if now := b.clock.Now(); !now.Before(check) {
			check = now.Add(b.opts.Resync)
			if m, err := b.opts.Store.Load(changedKey); err == nil && !bytes.Equal(m, marker) {
				marker = m
				entries = b.load(nil)
			}
		}
	}
}

// load reads every schedule that the loop fires (entries nil) or, into
// entries, those of ids.
func (b *Book) load(entries map[string]*entry, ids ...map[string]bool) map[string]*entry {
	if entries == nil {
		all, err := b.opts.Store.AllSchedules()
		if err != nil {
			b.log.Error("schedules: read them", "err", err)
			return map[string]*entry{}
		}
		entries = make(map[string]*entry, len(all))
		for _, sc := range all {
			if !b.opts.Fires(sc) {
				continue
			}
			if e, err := b.entryOf(sc); err == nil {
				entries[sc.ID] = e
			} else {
				b.log.Error("schedules: unreadable schedule left out", "schedule", sc.ID, "err", err)
			}
		}
		return entries
	}
	for _, set := range ids {
		for id := range set {
			sc, found, err := b.opts.Store.Schedule(id)
			switch {
			case err != nil:
				b.log.Error("schedules: read one", "schedule", id, "err", err)
			case !found || !b.opts.Fires(sc):
				delete(entries, id)
			default:
				if e, err := b.entryOf(sc); err == nil {
					entries[id] = e
				}
			}
		}
	}
	return entries
}

// visit fires e if it is due at now: asked to run now, or its instant
// came.
func (b *Book) visit(ctx context.Context, e *entry, now time.Time) {
	if e.sc.RunNow {
		e.sc.RunNow = false
		sc := e.sc
		b.start(func() {
			cleared := false
			if _, err := b.opts.Store.UpdateSchedule(sc.ID, func(s *store.Schedule) bool {
				cleared = s.RunNow
				s.RunNow = false
				return cleared
			}); err != nil || !cleared { // another replica's loop took it
				b.reread(sc.ID)
				return
			}
			b.fire(ctx, sc, firing{label: "now", at: now})
		})
	}
	if r := e.sc.Retry; !e.sc.Paused && !r.IsZero() && !r.After(now) {
		e.sc.Retry = time.Time{}
		sc := e.sc
		b.start(func() {
			cleared := false
			if _, err := b.opts.Store.UpdateSchedule(sc.ID, func(s *store.Schedule) bool {
				cleared = s.Retry.Equal(r) && !s.Paused
				if cleared {
					s.Retry = time.Time{}
				}
				return cleared
			}); err != nil || !cleared {
				b.reread(sc.ID)
				return
			}
			loc, _ := b.zone(sc)
			b.fire(ctx, sc, firing{label: fmt.Sprintf("%s · retry %d", sc.Fired.In(loc).Format("15:04"), sc.Failures), at: now})
		})
	}
	if e.sc.Paused || e.next.IsZero() || e.next.After(now) {
		return
	}
	prev, sc := e.sc.Fired, e.sc
	latest := e.spec.Latest(prevOr(prev, sc.Created), now)
	e.sc.Fired = latest
	e.next = e.spec.Next(latest)
	if now.Sub(latest) <= max(b.opts.CatchUp, onTime) {
		b.start(func() {
			now, ok, err := store.FireSchedule(b.opts.Store, sc.ID, prev, latest)
			if err != nil || !ok || now.Paused { // paused on another replica meanwhile: skipped
				if err != nil {
					b.log.Error("schedules: record a firing", "schedule", sc.ID, "err", err)
				}
				b.reread(sc.ID) // fired elsewhere, or changed
				return
			}
			// As stored: a missed run noted meanwhile is told.
			b.fire(ctx, now, firing{label: latest.In(e.spec.Loc).Format("15:04"), at: latest, instant: true, prev: prev})
		})
		return
	}
	b.start(func() { b.miss(sc, prev, latest, e.spec.Loc) })
}

func prevOr(t, or time.Time) time.Time {
	if t.IsZero() {
		return or
	}
	return t
}

// start runs fn on a goroutine of its own, which Run waits for.
func (b *Book) start(fn func()) {
	b.runs.Add(1)
	go func() {
		defer b.runs.Done()
		fn()
	}()
}

// miss records that sc's instant at was missed by more than CatchUp: the
// next run says so; a once has no next run, so it is told now and
// forgotten.
func (b *Book) miss(sc store.Schedule, prev, at time.Time, loc *time.Location) {
	recorded := false
	_, err := b.opts.Store.UpdateSchedule(sc.ID, func(s *store.Schedule) bool {
		recorded = s.Fired.Equal(prev)
		if recorded {
			s.Fired, s.Missed, s.LastOutcome = at, at, "missed"
		}
		return recorded
	})
	if err != nil || !recorded {
		b.reread(sc.ID)
		return
	}
	b.opts.Counted("missed")
	b.log.Info("schedules: run missed while golem was down, skipped", "schedule", sc.ID, "at", at)
	b.reread(sc.ID)
	if sc.Spec == "" {
		if r := b.run(); r != nil {
			r.Notify(b.prompt(sc, ""), fmt.Sprintf("⏰ Schedule `%s` (%s) was to run at %s, while golem was not running; that is over %s ago, so it is skipped and forgotten.",
				sc.ID, name(sc), when(at, loc), b.opts.CatchUp))
		}
		b.forget(sc.ID)
	}
}

// firing is one run of a schedule: of an instant (its Fired moved from
// prev to at), or at once (/runnow, a retry).
type firing struct {
	label   string // the header's time: "09:00", "now", "09:00 · retry 1"
	at      time.Time
	instant bool
	prev    time.Time
}

// fire runs sc's prompt, its firing recorded, and records how it ended.
func (b *Book) fire(ctx context.Context, sc store.Schedule, f firing) {
	r := b.run()
	if r == nil {
		b.log.Error("schedules: no runner bound; run dropped", "schedule", sc.ID)
		return
	}
	loc, _ := b.zone(sc)
	header := fmt.Sprintf("⏰ %s · %s", name(sc), f.label)
	if !sc.Missed.IsZero() {
		header += fmt.Sprintf("\n_(the run of %s was skipped: golem was not running then)_", when(sc.Missed, loc))
	}
	b.log.Info("schedules: run", "schedule", sc.ID, "conversation", sc.Key, "at", f.at)
	outcome := r.RunPrompt(ctx, b.prompt(sc, header))
	b.opts.Counted(outcome)
	b.log.Info("schedules: run ended", "schedule", sc.ID, "outcome", outcome)
	b.record(sc, outcome, r, f)
}

// backoff is how long after its n-th failure in a row a run is tried
// again: 1 min, 2, 4, 8, ... at most an hour.
func backoff(n int) time.Duration {
	return min(time.Minute<<min(n-1, 6), time.Hour)
}

// nextAfter is sc's next regular instant after its last fired one, zero
// when it has none.
func (b *Book) nextAfter(sc store.Schedule) time.Time {
	e, err := b.entryOf(sc)
	if err != nil || e.next.IsZero() {
		return time.Time{}
	}
	return e.next
}

// failed reports whether a run that ended with outcome counts as failed.
func failed(outcome string) bool {
	return outcome == "failed" || outcome == "timed_out" || outcome == "error"
}

// record keeps how sc's run ended; failing MaxFailures times in a row, or
// its person not allowed any more, pauses sc with a note. A once is
// forgotten after its instant's run. An instant that golem shut down before its
// turn began is unfired, so that the next start may catch it up.
func (b *Book) record(sc store.Schedule, outcome string, r Runner, f firing) {
	now := b.clock.Now()
	why := ""
	unfired := outcome == core.PromptShutdown && f.instant
	_, err := b.opts.Store.UpdateSchedule(sc.ID, func(s *store.Schedule) bool {
		why = ""
		if unfired && s.Fired.Equal(f.at) {
			s.Fired = f.prev
			return true
		}
		s.LastRun, s.LastOutcome = now, outcome
		if !sc.Missed.IsZero() && s.Missed.Equal(sc.Missed) {
			s.Missed = time.Time{} // told
		}
		s.Retry = time.Time{}
		switch {
		case outcome == "done":
			s.Failures = 0
		case failed(outcome):
			s.Failures++
			if s.Failures >= MaxFailures && !s.Paused {
				s.Paused, why = true, fmt.Sprintf("its last %d runs failed", s.Failures)
			}
			if retry := now.Add(backoff(s.Failures)); !s.Paused && s.Spec != "" && retry.Before(b.nextAfter(*s)) {
				s.Retry = retry // before the next run, which comes on time
			}
		case outcome == "denied" && !s.Paused:
			s.Paused, why = true, "the person who set it may not use the bot any more (`access.allow`)"
		}
		return true
	})
	if err != nil {
		b.log.Error("schedules: record a run", "schedule", sc.ID, "err", err)
	}
	if why != "" {
		b.log.Warn("schedules: paused", "schedule", sc.ID, "outcome", outcome)
		r.Notify(b.prompt(sc, ""), fmt.Sprintf("⏸️ Schedule `%s` (%s) is paused: %s. `/unpause %s` resumes it.", sc.ID, name(sc), why, sc.ID))
	}
	if sc.Spec == "" && f.instant && !unfired { // after its instant's run; /runnow leaves it for that
		b.forget(sc.ID)
		return
	}
	b.reread(sc.ID)
}

// forget deletes the schedule id.
func (b *Book) forget(id string) {
	if err := b.opts.Store.DeleteSchedule(id); err != nil {
		b.log.Error("schedules: forget a once", "schedule", id, "err", err)
	}
	b.reread(id)
}

// when is t in loc as the answers show it.
func when(t time.Time, loc *time.Location) string {
	return t.In(loc).Format("Mon 2 Jan 15:04")
}
