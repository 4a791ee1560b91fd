package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/store"
)

// The bounds of the scheduled runs' answers a conversation keeps.
const (
	MaxRuns    = 20       // the latest runs (and notes) of each conversation
	MaxRunText = 32 << 10 // bytes of each answer's text; the rest is cut
)

// runJSON is a scheduled run's answer, or a schedule's note, as GET
// /v1/conversations/{key}/runs lists it.
type runJSON struct {
	Schedule string    `json:"schedule"`         // the schedule's id
	Header   string    `json:"header,omitempty"` // "⏰ daily-build · 09:00"; none for a note
	Started  time.Time `json:"started"`
	Ended    time.Time `json:"ended"`
	// Outcome is how the run ended, as golem_schedule_runs_total counts
	// it ("done", "failed", "timed_out", "stopped", ...), or "note".
	Outcome string `json:"outcome"`
	Text    string `json:"text"`            // the answer, without its header
	Error   string `json:"error,omitempty"` // the terminal error's message
	Cut     bool   `json:"cut,omitempty"`   // Text is the answer's first MaxRunText bytes
}

// runsKey is where key's runs are kept in the store's state.
func runsKey(key store.Key) string { return "http.runs." + key.String() }

var _ core.Prompter = (*Server)(nil)

// Prompted implements core.Prompter: a scheduled run of an HTTP
// conversation streams, as every turn does, on the conversation's
// /events while it runs, and its answer is kept in the store when it
// ends (the conversation's latest MaxRuns, each cut at MaxRunText bytes),
// for GET /v1/conversations/{key}/runs, across restarts.
func (s *Server) Prompted(key store.Key, p core.Prompt) func(...parser.Event) {
	run := runJSON{Schedule: p.Schedule, Header: p.Header, Started: time.Now()}
	head := p.Header
	if head != "" {
		head += "\n\n" // how core sends it
	}
	var mu sync.Mutex
	var text strings.Builder
	return func(evs ...parser.Event) {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range evs {
			switch {
			case ev.Type == parser.Text:
				c := ev.Content
				if head != "" { // the header comes first: it is kept apart
					n := min(len(head), len(c))
					c, head = c[n:], head[n:]
				}
				if room := MaxRunText - text.Len(); len(c) > room {
					c, run.Cut = cutUTF8(c, room), true
				}
				text.WriteString(c)
			case ev.Terminal():
				run.Ended, run.Text, run.Outcome = time.Now(), text.String(), core.Outcome(ev)
				if ev.Type == parser.Error {
					run.Error = ev.Message
				}
				if p.Header == "" {
					run.Outcome = "note"
				}
				s.keepRun(key, run)
			}
		}
	}
}

// parsePathKey reads the {key} of a path: 400 for one that cannot be a
// conversation's key (NUL, "/", "..", too long, not a key's form).
func parsePathKey(w http.ResponseWriter, r *http.Request) (store.Key, bool) {
	raw := r.PathValue("key")
	switch {
	case raw == "":
		writeError(w, http.StatusBadRequest, "no conversation key")
		return store.Key{}, false
	case len(raw) > MaxKeyLen:
		writeError(w, http.StatusBadRequest, "a conversation key is at most "+strconv.Itoa(MaxKeyLen)+" bytes")
		return store.Key{}, false
	case strings.ContainsAny(raw, "\x00/") || strings.Contains(raw, ".."):
		writeError(w, http.StatusBadRequest, `a conversation key has no NUL, "/" or ".."`)
		return store.Key{}, false
	}
	key, err := store.ParseKey(raw)
	if err != nil {
		writeError(w, http.StatusBadRequest, "not a conversation key: "+err.Error())
		return store.Key{}, false
	}
	return key, true
}

// cutUTF8 is s's first n bytes or fewer, not splitting a character.
func cutUTF8(s string, n int) string {
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// keepRun adds run to key's latest, forgetting the oldest past MaxRuns or
// past what the store takes in one value.
func (s *Server) keepRun(key store.Key, run runJSON) {
	if s.opts.Store == nil {
		return
	}
	err := s.opts.Store.UpdateState(runsKey(key), func(old []byte) ([]byte, bool) {
		var runs []runJSON
		if len(old) > 0 && json.Unmarshal(old, &runs) != nil {
			runs = nil // unreadable: start again rather than lose this one
		}
		runs = append(runs, run)
		runs = runs[max(0, len(runs)-MaxRuns):]
		for {
			raw, _ := json.Marshal(runs)
			if len(raw) <= store.MaxValue || len(runs) == 1 {
				return raw, true
			}
			runs = runs[1:]
		}
	})
	if err != nil {
		s.log.Error("http: keep a scheduled run's answer", "conversation", key, "schedule", run.Schedule, "err", err)
	}
}

// runs answers GET /v1/conversations/{key}/runs: {"runs": [...]}, the
// conversation's latest scheduled runs' answers, oldest first; ?after=T
// (RFC 3339) keeps those that ended after T.
func (s *Server) runs(w http.ResponseWriter, r *http.Request) {
	key, ok := parsePathKey(w, r)
	if !ok {
		return
	}
	var after time.Time
	if a := r.URL.Query().Get("after"); a != "" {
		t, err := time.Parse(time.RFC3339Nano, a)
		if err != nil {
			writeError(w, http.StatusBadRequest, "after="+strconv.Quote(a)+" is not an RFC 3339 time")
			return
		}
		after = t
	}
	raw, err := s.opts.Store.Load(runsKey(key))
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "the store cannot be read now: "+err.Error())
		return
	}
	runs := []runJSON{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &runs); err != nil {
			s.log.Error("http: read the scheduled runs' answers", "conversation", key, "err", err)
			writeError(w, http.StatusInternalServerError, "the runs kept for this conversation are unreadable")
			return
		}
	}
	kept := runs[:0]
	for _, run := range runs {
		if run.Ended.After(after) {
			kept = append(kept, run)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(struct {
		Runs []runJSON `json:"runs"`
	}{kept})
}
