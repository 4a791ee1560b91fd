package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/golem-chat/golem/cluster"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/store/etcdstore"
)

// sharedChat is one chat platform that every replica posts to.
type sharedChat struct {
	mu   sync.Mutex
	next int
}

func (c *sharedChat) Platform() string                                { return "rec" }
func (c *sharedChat) Start(ctx context.Context, _ core.Handler) error { <-ctx.Done(); return nil }
func (c *sharedChat) Limits() core.Limits                             { return core.Limits{MaxLen: 4000} }
func (c *sharedChat) Measure(s string) int                            { return utf8.RuneCountInString(s) }
func (c *sharedChat) Edit(context.Context, core.MessageRef, string) error {
	return nil
}
func (c *sharedChat) SendActivity(context.Context, core.MessageRef, string) error { return nil }
func (c *sharedChat) Send(_ context.Context, to core.Place, _ string) (core.MessageRef, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	return core.MessageRef{Channel: to.Channel, Thread: to.Thread, ID: strconv.Itoa(c.next)}, nil
}

// opReplica is one replica of a test: its Dispatcher, its store and its
// operator's API.
type opReplica struct {
	d    *core.Dispatcher
	st   *etcdstore.Store
	base string
}

// startOperatorReplicas starts replicas of those names on one etcd, with
// the fake agent, all posting to one chat.
func startOperatorReplicas(t *testing.T, names ...string) []opReplica {
	ec := etcdtest.Start(t, 1)
	dir := t.TempDir()
	eng := engine.NewClaudeCode(engine.Config{Command: enginetest.Build(t), Env: map[string]string{"FAKE_AGENT_LOG": filepath.Join(dir, "agent.log")}})
	chat := &sharedChat{}
	start := func(name string) opReplica {
		st, err := etcdstore.Open(etcdstore.Config{Endpoints: ec.Endpoints, Prefix: "golem"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := cluster.JoinEtcd(ctx, cluster.EtcdOptions{Client: st.Client(), Prefix: st.Prefix(), Name: name, TTL: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		conv := cluster.NewConversations(r, nil)
		conv.AttachStore(st)
		d, err := core.NewDispatcher(core.Options{Engines: map[string]engine.Engine{"claude-code": eng}, DefaultEngine: "claude-code",
			Workspace: dir, Allow: []string{"rec:*"}, Store: st, Cluster: conv, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		conv.Bind(d)
		d.Register(chat)
		ln, base := listen(t)
		s, err := New(Options{Listener: ln, Logger: testLogger(t), Operator: d, Store: st, Replica: name})
		if err != nil {
			t.Fatal(err)
		}
		sctx, stop := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- s.Start(sctx, d) }()
		t.Cleanup(func() {
			stop()
			<-served
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			d.Close(ctx)
			cancel()
			conv.Close()
			r.Close()
			st.Close()
		})
		return opReplica{d: d, st: st, base: base}
	}
	var out []opReplica
	for _, n := range names {
		out = append(out, start(n))
	}
	return out
}

// TestOperatorAcrossReplicas: two replicas on one etcd, each with its
// operator's API. A turn running on replica a is listed by b's API as
// running on a; /new and /stop posted to b are done on a (forwarded as a
// click is), audited as the operator's; /events stays a's to serve (409
// from b, naming a). A platform's click that dresses as the operator's
// forwarded action does nothing.
func TestOperatorAcrossReplicas(t *testing.T) {
	rs := startOperatorReplicas(t, "a", "b")
	a, b := rs[0], rs[1]
	a.d.Handle(context.Background(), core.Message{Platform: "rec", Channel: "C1", ID: "m0", EventID: "m0", User: "alice", Text: "hello"})
	eventually(t, "the first turn kept", func() bool {
		var d conversationJSON
		res := call(t, http.MethodGet, convURL(b.base, "rec::C1"), "", "")
		return res.StatusCode == 200 && json.NewDecoder(res.Body).Decode(&d) == nil && d.State == "idle"
	})
	a.d.Handle(context.Background(), core.Message{Platform: "rec", Channel: "C1", ID: "m1", EventID: "m1", User: "alice", Text: "!text 10\n!hang"})

	var seen conversationJSON
	eventually(t, "b lists the turn running on a", func() bool {
		var all listing
		getJSON(t, b.base+"/v1/conversations", "", &all)
		for _, c := range all.Conversations {
			if c.Key == "rec::C1" {
				seen = c
			}
		}
		return seen.State == "running" && seen.Replica == "a"
	})
	forged := b.d.HandleAction(context.Background(), core.Action{Platform: "rec", Channel: "C1", User: "mallory",
		Data: "golem:operator-stop:a:rec::C1"})
	if !errors.Is(forged.Err, core.ErrUnknownRequest) {
		t.Errorf("a platform's click as the operator's action: %+v", forged)
	}

	var act actionJSON
	nw := call(t, http.MethodPost, convURL(b.base, "rec::C1", "/new"), "", "")
	if nw.StatusCode != 200 || json.NewDecoder(nw.Body).Decode(&act) != nil || !strings.Contains(act.Text, "An answer is still running") {
		t.Fatalf("new from b: %d %+v; want a's answer, which runs the turn", nw.StatusCode, act)
	}
	res := call(t, http.MethodGet, convURL(b.base, "rec::C1", "/events"), "", "")
	if res.StatusCode != http.StatusConflict {
		t.Errorf("events from b: %d, want 409", res.StatusCode)
	}
	if msg := errorBody(t, res); !strings.Contains(msg, "replica a") {
		t.Errorf("b's refusal %q does not name replica a", msg)
	}
	watch := call(t, http.MethodGet, convURL(a.base, "rec::C1", "/events"), "", "")
	if watch.StatusCode != 200 {
		t.Fatalf("events from a: %d", watch.StatusCode)
	}
	live := newSSEReader(watch.Body)
	if first, err := live.next(); err != nil || !strings.Contains(first, "the quick") {
		t.Errorf("a's answer joined with %q, %v", first, err)
	}
	var there conversationJSON
	getJSON(t, convURL(a.base, "rec::C1"), "", &there)
	if there.State != "running" || there.Replica != "a" {
		t.Errorf("a shows %+v", there)
	}

	stop := call(t, http.MethodPost, convURL(b.base, "rec::C1", "/stop"), "", "")
	if stop.StatusCode != 200 || json.NewDecoder(stop.Body).Decode(&act) != nil || !strings.Contains(act.Text, "Stopping the running answer") {
		t.Fatalf("stop from b: %d %+v", stop.StatusCode, act)
	}
	rest := decodeEvents(t, live.readAll(t))
	if end := rest[len(rest)-1]; end.Type != "error" || end.Reason != "stopped" {
		t.Errorf("a's turn ended %+v, want stopped", end)
	}
	var detail detailJSON
	eventually(t, "b shows it idle", func() bool {
		getJSON(t, convURL(b.base, "rec::C1"), "", &detail)
		return detail.State == "idle"
	})
	if len(detail.Audit) != 2 || detail.Audit[0].Action != "new" || detail.Audit[1].Action != "stop" || detail.Audit[1].By != core.Operator {
		t.Errorf("audit %+v, want new then stop by %s", detail.Audit, core.Operator)
	}
	again := call(t, http.MethodPost, convURL(b.base, "rec::C1", "/stop"), "", "")
	if again.StatusCode != 200 || json.NewDecoder(again.Body).Decode(&act) != nil || act.Text != "Nothing is running." {
		t.Errorf("stop of the idle conversation from b: %d %+v", again.StatusCode, act)
	}
}

// TestOperatorDecidesOnAnotherReplica: a request of a turn on replica a,
// allowed through replica b's /v1/permissions by the conversation's key,
// is decided on a as the operator, and the agent goes on.
func TestOperatorDecidesOnAnotherReplica(t *testing.T) {
	rs := startOperatorReplicas(t, "a", "b")
	a, b := rs[0], rs[1]
	a.d.Handle(context.Background(), core.Message{Platform: "rec", Channel: "C1", ID: "m1", EventID: "m1", User: "alice",
		Text: "!ask Write {\"file_path\":\"/w/a.txt\",\"content\":\"x\"}\nwritten"})
	var d detailJSON
	eventually(t, "b shows the request waiting on a", func() bool {
		res := call(t, http.MethodGet, convURL(b.base, "rec::C1"), "", "")
		return res.StatusCode == 200 && json.NewDecoder(res.Body).Decode(&d) == nil && len(d.Pending) == 1
	})
	if p := d.Pending[0]; p.Here || p.Replica != "a" || p.Tool != "Write" {
		t.Fatalf("b shows %+v, want a's Write", p)
	}
	body := `{"conversation":"rec::C1","id":"` + d.Pending[0].ID + `","decision":"allow"}`
	if unknown := call(t, http.MethodPost, b.base+"/v1/permissions", "", strings.Replace(body, d.Pending[0].ID, "00000000", 1)); unknown.StatusCode != 404 {
		t.Errorf("an unknown id from b: %d, want 404", unknown.StatusCode)
	}
	if ok := call(t, http.MethodPost, b.base+"/v1/permissions", "", body); ok.StatusCode != 200 {
		t.Fatalf("allow from b: %d %s", ok.StatusCode, errorBody(t, ok))
	}
	if again := call(t, http.MethodPost, b.base+"/v1/permissions", "", body); again.StatusCode != 409 {
		t.Errorf("allowing again from b: %d, want 409", again.StatusCode)
	}
	eventually(t, "the agent goes on and the turn ends", func() bool {
		getJSON(t, convURL(b.base, "rec::C1"), "", &d)
		return d.State == "idle" && len(d.Turns) == 1
	})
	if d.Turns[0].Outcome != "done" {
		t.Errorf("the turn ended %+v", d.Turns[0])
	}
	recs, err := b.st.Approvals(false)
	if err != nil || len(recs) != 1 || recs[0].DecidedBy != core.Operator || recs[0].Decision != "allow" {
		t.Errorf("approval records %+v, %v; want one allowed by %s", recs, err, core.Operator)
	}
	if len(d.Audit) != 1 || d.Audit[0].Action != "allow" {
		t.Errorf("audit %+v, want the allow", d.Audit)
	}
}
