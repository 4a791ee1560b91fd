package intake

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/journal"
)

// memState is a core.StateStore in memory.
type memState struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memState) Load(key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key], nil
}

func (s *memState) Save(key string, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = v
	return nil
}

// handler records the texts it was handed, in order.
type handler struct {
	mu    sync.Mutex
	texts []string
}

func (h *handler) Handle(_ context.Context, m core.Message) {
	h.mu.Lock()
	h.texts = append(h.texts, m.Text)
	h.mu.Unlock()
}

func (h *handler) HandleAction(context.Context, core.Action) core.ActionResult {
	return core.ActionResult{}
}

func id(raw json.RawMessage) string {
	var v struct{ ID string }
	_ = json.Unmarshal(raw, &v)
	return v.ID
}

// A message behind one whose files download waits for it and is journaled
// (and the journal saved) before the platform is told; one with nothing
// to wait for goes at once, unjournaled; /stop overtakes; each is struck
// once handed on.
func TestTakeKeepsTheOrderAndJournalsWhatWaits(t *testing.T) {
	st := &memState{m: map[string][]byte{}}
	j := journal.New(journal.Options{Store: st, Key: "k", ID: id})
	h := &handler{}
	ctx := context.Background()
	in := New(j, func() (core.Handler, context.Context) { return h, ctx })
	release := make(chan struct{})
	var saved []string // what the journal held when each was confirmed
	confirm := func() {
		raw, _ := st.Load("k")
		saved = append(saved, string(raw))
	}
	m := func(id, text string) (core.Message, json.RawMessage) {
		return core.Message{Channel: "C", Text: text, EventID: id}, json.RawMessage(`{"ID":"` + id + `"}`)
	}
	a, rawA := m("a", "see the file")
	if kept := in.Take(a, "a", rawA, true, confirm, func(*core.Message) bool { <-release; return true }); !kept {
		t.Error("a message with files to download was not journaled")
	}
	b, rawB := m("b", "and fix it")
	if kept := in.Take(b, "b", rawB, true, confirm, nil); !kept {
		t.Error("a message behind a download was not journaled")
	}
	stop, rawS := m("s", "/stop")
	if kept := in.Take(stop, "s", rawS, true, confirm, nil); kept {
		t.Error("/stop, with nothing before it in its own lane, was journaled")
	}
	other, rawO := m("o", "elsewhere")
	other.Channel = "D"
	if !in.Waits(core.Message{Channel: "C", Text: "next"}) || in.Waits(other) {
		t.Error("Waits does not tell the lane of a download from an idle one")
	}
	in.Take(other, "o", rawO, true, confirm, nil)
	h.mu.Lock()
	early := slices.Clone(h.texts)
	h.mu.Unlock()
	if !slices.Equal(early, []string{"/stop", "elsewhere"}) {
		t.Errorf("handed on before the download ended: %q, want /stop and the other channel's", early)
	}
	close(release)
	in.Close()
	if in.Waits(b) {
		t.Error("Waits after every message was handed on")
	}
	if !slices.Equal(h.texts, []string{"/stop", "elsewhere", "see the file", "and fix it"}) {
		t.Errorf("handed on %q", h.texts)
	}
	if len(saved) < 2 || !json.Valid([]byte(saved[1])) || !strings.Contains(saved[1], `"b"`) {
		t.Errorf("the journal when b was confirmed: %q", saved)
	}
	j.Save()
	if raw, _ := st.Load("k"); strings.Contains(string(raw), `"a"`) || strings.Contains(string(raw), `"b"`) {
		t.Errorf("handed-on messages still journaled: %s", raw)
	}
}

// Once the adapter has stopped, a message is journaled for the next start
// and not handed on; one whose download was cut short stays too.
func TestTakeAfterStopKeepsTheMessage(t *testing.T) {
	st := &memState{m: map[string][]byte{}}
	j := journal.New(journal.Options{Store: st, Key: "k", ID: id})
	h := &handler{}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := false
	var mu sync.Mutex
	in := New(j, func() (core.Handler, context.Context) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return nil, nil
		}
		return h, ctx
	})
	cut, rawC := core.Message{Channel: "C", Text: "cut"}, json.RawMessage(`{"ID":"c"}`)
	in.Take(cut, "c", rawC, true, nil, func(*core.Message) bool { cancel(); return false })
	in.Close()
	mu.Lock()
	stopped = true
	mu.Unlock()
	late, rawL := core.Message{Channel: "C", Text: "late"}, json.RawMessage(`{"ID":"l"}`)
	if kept := in.Take(late, "l", rawL, true, nil, nil); !kept {
		t.Error("a message taken after the stop was not journaled")
	}
	if len(h.texts) != 0 {
		t.Errorf("handed on %q", h.texts)
	}
	raw, _ := st.Load("k")
	if !strings.Contains(string(raw), `"c"`) || !strings.Contains(string(raw), `"l"`) {
		t.Errorf("the journal %s lacks the cut-short and the late message", raw)
	}
}
