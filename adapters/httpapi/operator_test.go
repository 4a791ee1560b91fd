package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/bottest"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/worktree"
)

// serveOperator is serveDispatcher with the operator's view on, and a
// token when token is not "".
func serveOperator(t *testing.T, token string) (string, *bottest.Bot) {
	t.Helper()
	ln, base := listen(t)
	b := bottest.New(t, bottest.Options{Trusted: []string{"http"}, Tune: func(o *core.Options) { o.Busy = core.BusyQueue }})
	s, err := New(Options{Listener: ln, Logger: testLogger(t), Token: token, Operator: b.Dispatcher, Store: b.Store})
	if err != nil {
		t.Fatal(err)
	}
	b.Start(s)
	return base, b
}

// call makes a request with the token (when not "") and returns the
// response, closed at the end of the test.
func call(t *testing.T, method, url, token string, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// getJSON GETs url and decodes its 200 answer into v.
func getJSON(t *testing.T, url, token string, v any) {
	t.Helper()
	res := call(t, http.MethodGet, url, token, "")
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, b)
	}
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

type listing struct {
	Conversations []conversationJSON `json:"conversations"`
	Next          *string            `json:"next"`
}

func convURL(base, key string, rest ...string) string {
	return base + "/v1/conversations/" + url.PathEscape(key) + strings.Join(rest, "")
}

// TestOperatorAPI: a finished and a running conversation as the listing,
// the detail and the live answer show them, and /stop from the API.
func TestOperatorAPI(t *testing.T) {
	base, b := serveOperator(t, "")
	chatEvents(t, base, "done1", "hello")
	eventually(t, "done1's session is saved and its turn over", func() bool { // after its answer: its last activity, then its end
		c, err := b.Store.Conversation(store.NewKey("http", "", "done1", ""))
		if err != nil || c.SessionID == "" {
			return false
		}
		var l listing
		getJSON(t, base+"/v1/conversations", "", &l)
		return len(l.Conversations) == 1 && l.Conversations[0].State == "idle"
	})

	res := postChat(t, base, `{"conversation":"run1","text":"!text 30\n!hang"}`)
	chat := newSSEReader(res.Body)
	first, err := chat.next()
	var firstEv wireEvent
	if err != nil || json.Unmarshal([]byte(first), &firstEv) != nil || firstEv.Type != "text" {
		t.Fatalf("first event %q, %v", first, err)
	}

	var all listing
	getJSON(t, base+"/v1/conversations", "", &all)
	if len(all.Conversations) != 2 || all.Next != nil {
		t.Fatalf("listing %+v, want 2 conversations and no next page", all)
	}
	run, done := all.Conversations[0], all.Conversations[1]
	if run.Key != "http::run1" || run.State != "running" || run.Started == nil || run.Engine != "claude-code" || run.Platform != "http" || run.Channel != "run1" {
		t.Errorf("first listed %+v, want http::run1 running (newest activity first)", run)
	}
	if done.Key != "http::done1" || done.State != "idle" || done.Month.Turns != 1 || done.Permissions != "ask" || done.Isolation.Mode != "shared" {
		t.Errorf("second listed %+v, want http::done1 idle with one turn this month", done)
	}
	var only listing
	getJSON(t, base+"/v1/conversations?state=running", "", &only)
	if len(only.Conversations) != 1 || only.Conversations[0].Key != "http::run1" {
		t.Errorf("?state=running listed %+v", only.Conversations)
	}
	getJSON(t, base+"/v1/conversations?platform=slack", "", &only)
	if len(only.Conversations) != 0 {
		t.Errorf("?platform=slack listed %+v", only.Conversations)
	}

	if err := b.Store.SaveSchedule(store.Schedule{ID: "sc1", Key: store.NewKey("http", "", "done1", ""), Platform: "http", Channel: "done1",
		User: "http", Spec: "0 9 * * 1-5", Prompt: "summarize the night's CI failures", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var detail detailJSON
	getJSON(t, convURL(base, "http::done1"), "", &detail)
	if len(detail.Schedules) != 1 || detail.Schedules[0].ID != "sc1" || detail.Schedules[0].Spec != "0 9 * * 1-5" || detail.Schedules[0].User != "http:http" {
		t.Errorf("done1's schedules %+v", detail.Schedules)
	}
	if len(detail.Turns) != 1 || detail.Turns[0].Outcome != "done" || detail.Turns[0].By != "http:http" || detail.Turns[0].DurationMS <= 0 {
		t.Errorf("done1's turns %+v, want one done turn by http:http", detail.Turns)
	}
	raw := call(t, http.MethodGet, convURL(base, "http::done1"), "", "")
	if b, _ := io.ReadAll(raw.Body); strings.Contains(string(b), "hello") || strings.Contains(string(b), "CI failures") {
		t.Errorf("the detail shows the message's text: %s", b)
	}

	// Joining the running answer: the text so far comes first (once the
	// agent has said its 30 characters, as the chat's stream shows).
	for said := len(firstEv.Content); said < 30; {
		next, err := chat.next()
		var ev wireEvent
		if err != nil || json.Unmarshal([]byte(next), &ev) != nil {
			t.Fatalf("the chat's stream: %q, %v", next, err)
		}
		if ev.Type == "text" {
			said += len(ev.Content)
		}
	}
	watch := call(t, http.MethodGet, convURL(base, "http::run1", "/events"), "", "")
	if watch.StatusCode != 200 || watch.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", watch.StatusCode, watch.Header.Get("Content-Type"))
	}
	live := newSSEReader(watch.Body)
	first, err = live.next()
	var ev wireEvent
	if err != nil || json.Unmarshal([]byte(first), &ev) != nil || ev.Type != "text" || len(ev.Content) < 30 {
		t.Fatalf("the first event of a joined answer %q, %v; want its text so far", first, err)
	}

	stop := call(t, http.MethodPost, convURL(base, "http::run1", "/stop"), "", "")
	var act actionJSON
	if stop.StatusCode != 200 || json.NewDecoder(stop.Body).Decode(&act) != nil || !strings.Contains(act.Text, "Stopping") {
		t.Fatalf("stop: %d %+v", stop.StatusCode, act)
	}
	for _, r := range []*sseReader{chat, live} {
		rest := decodeEvents(t, r.readAll(t))
		if end := rest[len(rest)-1]; end.Type != "error" || end.Reason != "stopped" {
			t.Errorf("the stopped turn ended %+v", end)
		}
	}
	eventually(t, "run1 is idle", func() bool {
		getJSON(t, convURL(base, "http::run1"), "", &detail)
		return detail.State == "idle"
	})
	if len(detail.Audit) != 1 || detail.Audit[0].Action != "stop" || detail.Audit[0].By != "http:operator" {
		t.Errorf("audit %+v, want one stop by http:operator", detail.Audit)
	}
	if idle := call(t, http.MethodGet, convURL(base, "http::run1", "/events"), "", ""); idle.StatusCode != http.StatusNoContent {
		t.Errorf("events of an idle conversation: %d, want 204", idle.StatusCode)
	}

	nw := call(t, http.MethodPost, convURL(base, "http::done1", "/new"), "", "")
	if nw.StatusCode != 200 {
		t.Fatalf("new: %d", nw.StatusCode)
	}
	getJSON(t, convURL(base, "http::done1"), "", &detail)
	if len(detail.Audit) != 1 || detail.Audit[0].Action != "new" || !strings.Contains(detail.Audit[0].Result, "Session forgotten") {
		t.Errorf("audit after /new %+v", detail.Audit)
	}
	if next := chatEvents(t, base, "done1", "again"); next[len(next)-1].SessionID == "" {
		t.Errorf("the turn after /new: %+v", next)
	}
	var diff actionJSON
	getJSON(t, convURL(base, "http::done1", "/diff"), "", &diff)
	if !strings.Contains(diff.Text, "shared workspace") {
		t.Errorf("diff of a shared workspace: %q", diff.Text)
	}
}

// TestOperatorPaging: pages of the listing in order, each conversation
// once, the cursor past the last page null.
func TestOperatorPaging(t *testing.T) {
	base, b := serveOperator(t, "")
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var want []string
	for i := range 7 {
		k := store.NewKey("slack", "T1", fmt.Sprintf("C%d", i), "")
		at := t0.Add(time.Duration(i/2) * time.Minute) // pairs share a time: the key orders them
		if err := b.Store.SaveConversation(store.Conversation{Key: k, LastUsed: at}); err != nil {
			t.Fatal(err)
		}
	}
	for _, i := range []int{6, 4, 5, 2, 3, 0, 1} {
		want = append(want, fmt.Sprintf("slack:T1:C%d", i))
	}
	var got []string
	next := ""
	for pages := 0; ; pages++ {
		if pages > 4 {
			t.Fatal("more pages than there are conversations")
		}
		var page listing
		u := base + "/v1/conversations?limit=2&platform=slack"
		if next != "" {
			u += "&after=" + url.QueryEscape(next)
		}
		getJSON(t, u, "", &page)
		for _, c := range page.Conversations {
			got = append(got, c.Key)
		}
		if page.Next == nil {
			break
		}
		next = *page.Next
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("paged %v, want %v", got, want)
	}
}

// TestOperatorBadInput: refusals are 4xx with a JSON error, never a 500.
func TestOperatorBadInput(t *testing.T) {
	base, b := serveOperator(t, "")
	if err := b.Store.SaveConversation(store.Conversation{Key: store.NewKey("slack", "T1", "C1", "")}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 10<<10)
	tests := []struct {
		name, method, path string
		status             int
	}{
		{"unknown key", "GET", "/v1/conversations/slack:T1:C2", 404},
		{"unknown key stop", "POST", "/v1/conversations/slack:T1:C2/stop", 404},
		{"dot dot slash", "GET", "/v1/conversations/..%2F..%2Fetc", 400},
		{"slash", "GET", "/v1/conversations/slack:T1%2FC1:x", 400},
		{"dot dot", "POST", "/v1/conversations/slack:..:C1/new", 400},
		{"NUL", "GET", "/v1/conversations/slack:T1:C1%00", 400},
		{"10 KB", "GET", "/v1/conversations/slack:T1:" + long, 400},
		{"not a key", "GET", "/v1/conversations/nothing", 400},
		{"events of unknown", "GET", "/v1/conversations/slack:T1:C9/events", 404},
		{"limit 0", "GET", "/v1/conversations?limit=0", 400},
		{"limit 201", "GET", "/v1/conversations?limit=201", 400},
		{"limit word", "GET", "/v1/conversations?limit=ten", 400},
		{"bad cursor", "GET", "/v1/conversations?after=%%%", 400},
		{"forged cursor", "GET", "/v1/conversations?after=bm9wZQ", 400},
		{"bad state", "GET", "/v1/conversations?state=sleeping", 400},
		{"stop by GET", "GET", "/v1/conversations/slack:T1:C1/stop", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, tt.method, base+tt.path, "", "")
			if res.StatusCode != tt.status {
				t.Fatalf("%s %s: %d, want %d", tt.method, tt.path, res.StatusCode, tt.status)
			}
			errorBody(t, res)
		})
	}
	var d detailJSON
	getJSON(t, convURL(base, "slack:T1:C1"), "", &d)
	if d.Key != "slack:T1:C1" || d.State != "idle" {
		t.Errorf("a stored Slack conversation: %+v", d)
	}
}

// TestOperatorToken: with http.token set the operator's API wants it,
// from loopback too.
func TestOperatorToken(t *testing.T) {
	base, b := serveOperator(t, "s3cret")
	if err := b.Store.SaveConversation(store.Conversation{Key: store.NewKey("slack", "T1", "C1", "")}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/conversations", "/v1/conversations/slack:T1:C1", "/v1/conversations/slack:T1:C1/events"} {
		for _, token := range []string{"", "wrong"} {
			if res := call(t, http.MethodGet, base+path, token, ""); res.StatusCode != http.StatusUnauthorized {
				t.Errorf("GET %s with token %q: %d, want 401", path, token, res.StatusCode)
			}
		}
	}
	if res := call(t, http.MethodPost, base+"/v1/conversations/slack:T1:C1/stop", "", ""); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("stop without the token: %d", res.StatusCode)
	}
	var all listing
	getJSON(t, base+"/v1/conversations", "s3cret", &all)
	if len(all.Conversations) != 1 {
		t.Errorf("with the token: %+v", all)
	}
}

// TestOperatorAllowsByKey: a permission request is allowed through
// /v1/permissions by the conversation's key, as the operator, and the
// agent goes on.
func TestOperatorAllowsByKey(t *testing.T) {
	base, b := serveOperator(t, "")
	res := postChat(t, base, `{"conversation":"ask1","text":"!ask Bash {\"command\":\"ls\"}\nran it"}`)
	chat := newSSEReader(res.Body)
	var d detailJSON
	eventually(t, "the request is pending", func() bool { // state and pending are read one after the other
		res := call(t, http.MethodGet, convURL(base, "http::ask1"), "", "")
		return res.StatusCode == 200 && json.NewDecoder(res.Body).Decode(&d) == nil && len(d.Pending) == 1 && d.State == "waiting"
	})
	if d.State != "waiting" || d.Pending[0].Tool != "Bash" || !d.Pending[0].Here {
		t.Errorf("detail %+v, want waiting for Bash", d)
	}
	body := fmt.Sprintf(`{"conversation":"http::ask1","id":%q,"decision":"allow"}`, d.Pending[0].ID)
	if wrong := call(t, http.MethodPost, base+"/v1/permissions", "", strings.Replace(body, "ask1", "ask2", 1)); wrong.StatusCode != 404 {
		t.Errorf("the id under another conversation's key: %d, want 404", wrong.StatusCode)
	}
	if ok := call(t, http.MethodPost, base+"/v1/permissions", "", body); ok.StatusCode != 200 {
		t.Fatalf("allow by key: %d %s", ok.StatusCode, errorBody(t, ok))
	}
	if again := call(t, http.MethodPost, base+"/v1/permissions", "", body); again.StatusCode != 409 {
		t.Errorf("allowing again: %d, want 409", again.StatusCode)
	}
	events := decodeEvents(t, chat.readAll(t))
	if got := answerText(events); !strings.Contains(got, "ran it") {
		t.Errorf("after the allow the agent said %q", got)
	}
	recs, err := b.Store.Approvals(false)
	if err != nil || len(recs) != 1 || recs[0].DecidedBy != core.Operator || recs[0].Decision != "allow" {
		t.Errorf("approval records %+v, %v; want one allowed by %s", recs, err, core.Operator)
	}
	getJSON(t, convURL(base, "http::ask1"), "", &d)
	if len(d.Audit) != 1 || d.Audit[0].Action != "allow" {
		t.Errorf("audit %+v", d.Audit)
	}
}

// TestOperatorQueued: a turn waiting for one of max_concurrent's slots is
// listed queued, and messages behind a running turn are counted.
func TestOperatorQueued(t *testing.T) {
	ln, base := listen(t)
	b := bottest.New(t, bottest.Options{Trusted: []string{"http"}, MaxConcurrent: 1,
		Tune: func(o *core.Options) { o.Busy = core.BusyQueue }})
	s, err := New(Options{Listener: ln, Logger: testLogger(t), Operator: b.Dispatcher, Store: b.Store})
	if err != nil {
		t.Fatal(err)
	}
	b.Start(s)
	first := postChat(t, base, `{"conversation":"a","text":"!text 10\n!hang"}`)
	if _, err := newSSEReader(first.Body).next(); err != nil {
		t.Fatal(err)
	}
	postChat(t, base, `{"conversation":"a","text":"behind"}`)
	postChat(t, base, `{"conversation":"b","text":"waits for a slot"}`)
	byKey := map[string]conversationJSON{}
	eventually(t, "a runs with one behind it, b is queued", func() bool {
		var all listing
		getJSON(t, base+"/v1/conversations", "", &all)
		for _, c := range all.Conversations {
			byKey[c.Key] = c
		}
		return byKey["http::a"].State == "running" && byKey["http::a"].Queued == 1 && byKey["http::b"].State == "queued"
	})
	var only listing
	getJSON(t, base+"/v1/conversations?state=queued", "", &only)
	if len(only.Conversations) != 1 || only.Conversations[0].Key != "http::b" {
		t.Errorf("?state=queued listed %+v", only.Conversations)
	}
	for _, k := range []string{"http::a", "http::b"} {
		if res := call(t, http.MethodPost, convURL(base, k, "/stop"), "", ""); res.StatusCode != 200 {
			t.Errorf("stop %s: %d", k, res.StatusCode)
		}
	}
}

// FuzzConversationPath: whatever key a path names, the answer is a 2xx
// or a 4xx, never a 500.
func FuzzConversationPath(f *testing.F) {
	for _, k := range []string{"slack:T1:C1", "..%2F", "a%00b", "http::x:y", "%3A%3A", "slack:T1:C1:7", "::", "x:y:z:w:v"} {
		f.Add(k)
	}
	b := bottest.New(f, bottest.Options{Trusted: []string{"http"}})
	if err := b.Store.SaveConversation(store.Conversation{Key: store.NewKey("slack", "T1", "C1", "")}); err != nil {
		f.Fatal(err)
	}
	s, err := New(Options{Listen: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler), Operator: b.Dispatcher, Store: b.Store})
	if err != nil {
		f.Fatal(err)
	}
	h := s.routes(context.Background(), b.Dispatcher)
	f.Fuzz(func(t *testing.T, key string) {
		for _, route := range []struct{ method, rest string }{{"GET", ""}, {"GET", "/events"}, {"GET", "/diff"}, {"POST", "/new"}} {
			req := httptest.NewRequest(route.method, "http://127.0.0.1/v1/conversations/"+url.PathEscape(key)+route.rest, nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s %q%s: %d %s", route.method, key, route.rest, rec.Code, rec.Body.String())
			}
		}
	})
}

// TestOperatorWorktree: with isolation: worktree the listing names the
// conversation's branch, the detail says whether its worktree holds
// changes, and /diff shows them.
func TestOperatorWorktree(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "README"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "first"}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	ws, err := worktree.New(worktree.Options{Isolation: worktree.Worktree, Root: filepath.Join(t.TempDir(), "worktrees")})
	if err != nil {
		t.Fatal(err)
	}
	ln, base := listen(t)
	b := bottest.New(t, bottest.Options{Workspace: repo, Trusted: []string{"http"}, Tune: func(o *core.Options) { o.Workdirs = ws }})
	s, err := New(Options{Listener: ln, Logger: testLogger(t), Operator: b.Dispatcher, Store: b.Store})
	if err != nil {
		t.Fatal(err)
	}
	b.Start(s)
	chatEvents(t, base, "wt", "hello")
	var d detailJSON
	getJSON(t, convURL(base, "http::wt"), "", &d)
	if d.Worktree == nil || d.Worktree.Dirty || d.Isolation.Dirty == nil || *d.Isolation.Dirty || !strings.HasPrefix(d.Worktree.Branch, "golem/") {
		t.Fatalf("a clean worktree shows as %+v / %+v", d.Worktree, d.Isolation)
	}
	chatEvents(t, base, "wt", "!write notes.txt remember the milk\ndone")
	getJSON(t, convURL(base, "http::wt"), "", &d)
	if d.Worktree == nil || !d.Worktree.Dirty || !*d.Isolation.Dirty {
		t.Errorf("a changed worktree shows as %+v", d.Worktree)
	}
	var all listing
	getJSON(t, base+"/v1/conversations", "", &all)
	if c := all.Conversations[0]; c.Isolation.Mode != "worktree" || c.Isolation.Branch != d.Worktree.Branch || c.Isolation.Dirty != nil {
		t.Errorf("listed isolation %+v, want worktree on %s, dirty unknown", c.Isolation, d.Worktree.Branch)
	}
	var diff actionJSON
	getJSON(t, convURL(base, "http::wt", "/diff"), "", &diff)
	if !strings.Contains(diff.Text, "notes.txt") || !strings.Contains(diff.Text, "remember the milk") {
		t.Errorf("diff %q", diff.Text)
	}
}
