package core

import (
	"log/slog"
	"slices"
	"sync"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/store"
)

// flight is a running turn's record in the store: where its answer is and
// which agent process runs it, so that the next start can stop an agent a
// hard kill left running and mark the answer interrupted. The Reply reports
// the answer message and the engine the agent process, from goroutines of
// their own; writes are serialized so the last state is the one stored.
type flight struct {
	st  store.Store
	log *slog.Logger

	// writing serializes the writes, each of the record as it is when it
	// runs, so that the last one stores the last state; mu guards the
	// record and is never held across a write, so that a change waits for
	// none (saveLater).
	writing sync.Mutex
	mu      sync.Mutex
	t       store.InFlight
	saved   bool
	later   sync.WaitGroup // saveLater's writes, which end waits for
}

// save applies change to the record and writes it; what names the write
// in the log if it fails, and false says it did.
func (f *flight) save(what string, change func(*store.InFlight)) bool {
	f.writing.Lock()
	defer f.writing.Unlock()
	f.mu.Lock()
	change(&f.t)
	t := f.t
	f.mu.Unlock()
	if err := f.st.BeginTurn(t); err != nil {
		f.log.Error(what, "err", err)
		return false
	}
	f.mu.Lock()
	f.saved = true
	f.mu.Unlock()
	return true
}

// saveLater is save without waiting for the write, for what a restart can
// do without for a moment: the answer message, which the Reply goes on
// posting to meanwhile (a restart that finds no answer in the record posts
// its notice as a reply to the message instead of under the answer), and
// the agent process, whose output is read meanwhile. The change is made at
// once, in the order of the calls; each write stores the record as it is
// when it runs, so the last write stores the last state. end waits for
// them, so a forgotten record is never written again.
func (f *flight) saveLater(what string, change func(*store.InFlight)) {
	f.mu.Lock()
	change(&f.t)
	f.mu.Unlock()
	f.later.Go(func() { f.save(what, func(*store.InFlight) {}) })
}

// started records the agent process that now runs the turn (the resume
// fallback's second process replaces the first). It is engine.Turn.OnStart,
// which the engine calls before it reads the agent's output: the write goes
// on meanwhile, so that a store round trip does not hold the first text
// back. A golem killed outright within that round trip leaves the agent
// unrecorded, to run on until it ends.
func (f *flight) started(g engine.Group) {
	f.saveLater("record agent process", func(t *store.InFlight) { t.AgentGroup, t.AgentStart = g.ID, g.Start })
}

// end forgets the record once the turn is over.
func (f *flight) end() {
	f.later.Wait()
	f.mu.Lock()
	saved, id := f.saved, f.t.ID
	f.mu.Unlock()
	if !saved {
		return
	}
	if err := f.st.EndTurn(id); err != nil {
		f.log.Error("end turn", "err", err)
	}
}

// stopLeftovers runs at start-up over the turns the last golem left in
// flight. An agent of theirs still running means golem was killed outright
// (its agents run in process groups of their own and outlive it): each is
// stopped, all at once, SIGTERM then SIGKILL after a grace, before anything
// is posted. It returns the turns still to be told they were interrupted;
// those that answered in a stream, which is gone, are forgotten.
func stopLeftovers(st store.Store, log *slog.Logger, turns []store.InFlight) []store.InFlight {
	var wg sync.WaitGroup
	for _, t := range turns {
		if t.AgentGroup == 0 {
			continue
		}
		log := log.With("conversation", t.Key, "platform", t.Platform, "pgid", t.AgentGroup)
		if t.AgentStart == 0 {
			log.Warn("an agent of the last run may still be running; without its start time (no /proc) golem cannot tell it from a reused pid and leaves it")
			continue
		}
		wg.Go(func() {
			if engine.StopLeftover(engine.Group{ID: t.AgentGroup, Start: t.AgentStart}) {
				log.Warn("stopped an agent that the last run of golem left running")
			}
		})
	}
	wg.Wait()
	return slices.DeleteFunc(turns, func(t store.InFlight) bool {
		if t.Stream {
			if err := st.EndTurn(t.ID); err != nil {
				log.Error("end turn", "err", err)
			}
			return true
		}
		return false
	})
}
