package core

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/store"
)

// slowTurns is a store whose BeginTurn says it began (entered), then
// waits for gate, noting each record it is given.
type slowTurns struct {
	store.Store
	entered chan struct{}
	gate    chan struct{}
	mu      sync.Mutex
	records []store.InFlight
}

func (s *slowTurns) BeginTurn(t store.InFlight) error {
	s.entered <- struct{}{}
	<-s.gate
	s.mu.Lock()
	s.records = append(s.records, t)
	s.mu.Unlock()
	return nil
}

func (s *slowTurns) EndTurn(string) error { return nil }

// TestSaveLaterDoesNotWaitForAWriteInFlight: while the agent process's
// record is being written, the Reply's note of its answer message returns
// at once, and the last write stores both.
func TestSaveLaterDoesNotWaitForAWriteInFlight(t *testing.T) {
	st := &slowTurns{entered: make(chan struct{}), gate: make(chan struct{})}
	f := &flight{st: st, log: slog.New(slog.DiscardHandler), t: store.InFlight{ID: "t1"}}
	f.started(engine.Group{ID: 42, Start: 7})
	<-st.entered // the agent process's write is in flight
	returned := make(chan struct{})
	go func() {
		f.saveLater("record answer", func(t *store.InFlight) { t.AnswerID = "A1" })
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(10 * time.Second): // it waits for the gate, which stays shut
		t.Error("saveLater waited for the write in flight")
	}
	go func() { // the writes that follow
		for range st.entered {
		}
	}()
	close(st.gate)
	<-returned
	f.end()
	close(st.entered)
	st.mu.Lock()
	defer st.mu.Unlock()
	last := st.records[len(st.records)-1]
	if last.AgentGroup != 42 || last.AnswerID != "A1" {
		t.Errorf("last record %+v, want agent 42 and answer A1", last)
	}
}
