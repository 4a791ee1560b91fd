package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/bottest"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/schedule"
	"github.com/jonboulle/clockwork"
)

// TestScheduledRunsThroughHTTP sets a schedule with POST /v1/chat and lets
// its instant come (an injected clock): the run is a turn of the HTTP
// conversation, streamed on its /events while it runs, its ⏰ line first;
// once it ends its answer is listed by /runs, also after a restart.
func TestScheduledRunsThroughHTTP(t *testing.T) {
	db := filepath.Join(t.TempDir(), "golem.db")
	key := core.KeyFor(core.Message{Platform: "http", Channel: "c1", Thread: "c1", DM: true}, core.ScopeChannel)
	runsURL := "/v1/conversations/" + url.PathEscape(key.String()) + "/runs"
	var id string
	t.Run("set and run", func(t *testing.T) {
		clock := clockwork.NewFakeClockAt(time.Date(2026, 12, 7, 8, 59, 0, 0, time.UTC))
		var book *schedule.Book
		ln, base := listen(t)
		b := bottest.New(t, bottest.Options{DB: db, Trusted: []string{"http"}, Tune: func(o *core.Options) {
			book = schedule.New(schedule.Options{Store: o.Store, Clock: clock, Logger: o.Logger})
			o.Schedules = book
		}})
		book.Bind(b.Dispatcher)
		s, err := New(Options{Listener: ln, Logger: testLogger(t), Operator: b.Dispatcher, Store: b.Store})
		if err != nil {
			t.Fatal(err)
		}
		b.Start(s)
		ctx, cancel := context.WithCancel(context.Background())
		loop := make(chan struct{})
		go func() { book.Run(ctx); close(loop) }()
		t.Cleanup(func() { cancel(); <-loop })

		// The run waits (a Bash tool) until the test has joined its stream.
		answer := answerText(chatEvents(t, base, "c1", "/every \"@every 1m\" !sh while [ ! -f go ]; do sleep 0.01; done\nsummarize"))
		m := regexp.MustCompile("Scheduled `([0-9a-f]+)`").FindStringSubmatch(answer)
		if m == nil {
			t.Fatalf("/every from the HTTP API: %q", answer)
		}
		id = m[1]
		wctx, stop := context.WithTimeout(context.Background(), 20*time.Second)
		defer stop()
		if err := clock.BlockUntilContext(wctx, 1); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute) // 09:00

		var res *http.Response
		eventually(t, "the run streams on /events", func() bool {
			r, err := http.Get(base + "/v1/conversations/" + url.PathEscape(key.String()) + "/events")
			if err != nil {
				t.Fatal(err)
			}
			if r.StatusCode == http.StatusOK {
				res = r
				return true
			}
			r.Body.Close()
			return false
		})
		defer res.Body.Close()
		sse := newSSEReader(res.Body)
		first, err := sse.next() // what the answer has so far, as one text
		if err != nil {
			t.Fatal(err)
		}
		var ev wireEvent
		if err := json.Unmarshal([]byte(first), &ev); err != nil {
			t.Fatal(err)
		}
		if head := "⏰ " + id + " · 09:00\n\n"; ev.Type != "text" || ev.Content != head {
			t.Errorf("the stream begins %+v, want the text %q", ev, head)
		}
		if err := os.WriteFile(filepath.Join(b.Workspace, "go"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		rest := decodeEvents(t, sse.readAll(t))
		if last := rest[len(rest)-1]; last.Type != "done" || !strings.Contains(answerText(rest), "echo: summarize") {
			t.Errorf("the rest of the stream: %+v", rest)
		}

		var got struct{ Runs []runJSON }
		eventually(t, "the run is listed", func() bool {
			got = getRuns(t, base+runsURL)
			return len(got.Runs) == 1
		})
		run := got.Runs[0]
		if run.Schedule != id || run.Header != "⏰ "+id+" · 09:00" || run.Outcome != "done" || run.Text != "echo: summarize" ||
			run.Cut || run.Ended.Before(run.Started) {
			t.Errorf("the run listed: %+v", run)
		}
		if after := getRuns(t, base+runsURL+"?after="+url.QueryEscape(run.Ended.Format(time.RFC3339Nano))); len(after.Runs) != 0 {
			t.Errorf("?after= its end still lists %+v", after.Runs)
		}
		res, err = http.Get(base + runsURL + "?after=yesterday")
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(errorBody(t, res), "not an RFC 3339 time") {
			t.Errorf("?after=yesterday: %d", res.StatusCode)
		}
	})
	t.Run("after a restart", func(t *testing.T) {
		ln, base := listen(t)
		b := bottest.New(t, bottest.Options{DB: db, Trusted: []string{"http"}})
		s, err := New(Options{Listener: ln, Logger: testLogger(t), Operator: b.Dispatcher, Store: b.Store})
		if err != nil {
			t.Fatal(err)
		}
		b.Start(s)
		if got := getRuns(t, base+runsURL); len(got.Runs) != 1 || got.Runs[0].Schedule != id || got.Runs[0].Text != "echo: summarize" {
			t.Errorf("after a restart: %+v", got.Runs)
		}
	})
}

func getRuns(t *testing.T, u string) (out struct{ Runs []runJSON }) {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, res.StatusCode, errorBody(t, res))
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestKeptRunsAreBounded: a conversation keeps its latest MaxRuns, each
// answer cut at MaxRunText bytes on a character's edge, and a note.
func TestKeptRunsAreBounded(t *testing.T) {
	b := bottest.New(t, bottest.Options{})
	st := b.Store
	s, err := New(Options{Listen: "127.0.0.1:0", Store: st, Operator: b.Dispatcher, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	key := core.KeyFor(core.Message{Platform: "http", Channel: "c1"}, core.ScopeChannel)
	long := strings.Repeat("é", MaxRunText) // two bytes each
	for i := range MaxRuns + 3 {
		sink := s.Prompted(key, core.Prompt{Schedule: "s", Header: "⏰ s · 09:00"})
		sink(textEvent("⏰ s · 09:00\n\n"), textEvent("x"), textEvent(long[:2*i]), textEvent(long), doneEvent()) // cut inside an é
	}
	s.Prompted(key, core.Prompt{Schedule: "s"})(textEvent("⏸️ paused"), doneEvent())
	raw, err := st.Load(runsKey(key))
	if err != nil {
		t.Fatal(err)
	}
	var runs []runJSON
	if err := json.Unmarshal(raw, &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs) != MaxRuns {
		t.Fatalf("%d runs kept, want %d", len(runs), MaxRuns)
	}
	for _, r := range runs[:MaxRuns-1] {
		if !r.Cut || len(r.Text) > MaxRunText || len(r.Text) < MaxRunText-1 || !strings.HasPrefix(r.Text, "xé") || !utf8.ValidString(r.Text) || strings.Contains(r.Text, "⏰") {
			t.Fatalf("a long answer kept %d bytes, cut %t, starting %q", len(r.Text), r.Cut, r.Text[:min(10, len(r.Text))])
		}
	}
	if note := runs[MaxRuns-1]; note.Outcome != "note" || note.Text != "⏸️ paused" || note.Header != "" || note.Cut {
		t.Errorf("the note kept: %+v", note)
	}
}

func textEvent(s string) parser.Event { return parser.Event{Type: parser.Text, Content: s} }
func doneEvent() parser.Event         { return parser.Event{Type: parser.Done} }
