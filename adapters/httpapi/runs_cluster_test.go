package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/cluster"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/store/etcdstore"
)

// lateOwner is a replica's real Cluster whose Owner answers as of just
// before a person's message claimed the conversation: the read that a
// scheduled run makes first finds it free, and the claim that follows finds
// it held (the race of two replicas, or of a message on this one).
type lateOwner struct {
	*cluster.Conversations
	mu    sync.Mutex
	claim func() // makes the person's turn claim the conversation; once
}

func (l *lateOwner) Owner(key store.Key) string {
	owner := l.Conversations.Owner(key)
	l.mu.Lock()
	claim := l.claim
	l.claim = nil
	l.mu.Unlock()
	if claim != nil {
		claim()
	}
	return owner
}

func (l *lateOwner) claimNext(claim func()) {
	l.mu.Lock()
	l.claim = claim
	l.mu.Unlock()
}

// TestScheduledRunLosesClaimRace: a scheduled run of an HTTP conversation
// (its answer goes to the adapter's sink) that finds the conversation free
// and then loses it to a person's turn, on another replica or on its own,
// waits busy_wait and is skipped; it does not wait for the person's turn to
// end, nor run after it. One that may not wait still runs in a free one.
func TestScheduledRunLosesClaimRace(t *testing.T) {
	const busyWait = 300 * time.Millisecond
	ec := etcdtest.Start(t, 1)
	dir := t.TempDir()
	agentLog := filepath.Join(dir, "agent.log")
	eng := engine.NewClaudeCode(engine.Config{Command: enginetest.Build(t), Env: map[string]string{"FAKE_AGENT_LOG": agentLog}})
	type replica struct {
		d    *core.Dispatcher
		conv *cluster.Conversations
		late *lateOwner
		base string
	}
	start := func(name string) replica {
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
		late := &lateOwner{Conversations: conv}
		d, err := core.NewDispatcher(core.Options{Engines: map[string]engine.Engine{"claude-code": eng}, DefaultEngine: "claude-code",
			Workspace: dir, Trusted: []string{"http"}, Timeout: time.Minute, Store: st, Cluster: late, Busy: core.BusyQueue, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		conv.Bind(d)
		ln, base := listen(t)
		s, err := New(Options{Listener: ln, Logger: testLogger(t), Operator: d, Store: st, Replica: name})
		if err != nil {
			t.Fatal(err)
		}
		d.Register(s)
		sctx, stop := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- s.Start(sctx, d) }()
		t.Cleanup(func() {
			stop()
			<-served
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			d.Close(ctx)
			cancel()
			conv.Close()
			r.Close()
			st.Close()
		})
		return replica{d: d, conv: conv, late: late, base: base}
	}
	leader, other := start("leader"), start("other")

	for i, tc := range []struct {
		name   string
		person replica // where the person's message comes
	}{
		{"on another replica", other},
		{"on this replica", leader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conversation := "race" + string(rune('a'+i))
			key := core.KeyFor(core.Message{Platform: "http", Channel: conversation, Thread: conversation}, core.ScopeChannel)
			release := filepath.Join(dir, conversation+".go")
			before := len(enginetest.ReadLog(t, agentLog))
			person := make(chan string, 1)
			leader.late.claimNext(func() { // on RunPrompt's goroutine: no t.Fatal
				body, _ := json.Marshal(chatRequest{Conversation: conversation, Text: "!sh while [ ! -f " + release + " ]; do sleep 0.01; done\nperson"})
				go func() {
					res, err := http.Post(tc.person.base+"/v1/chat", "application/json", strings.NewReader(string(body)))
					if err != nil {
						person <- err.Error()
						return
					}
					defer res.Body.Close()
					all, _ := io.ReadAll(res.Body)
					person <- string(all)
				}()
				for deadline := time.Now().Add(20 * time.Second); len(enginetest.ReadLog(t, agentLog)) == before; time.Sleep(5 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Error("the person's turn did not begin")
						return
					}
				}
				if owner := tc.person.conv.Owner(key); owner != tc.person.conv.Replica() {
					t.Errorf("the person's turn runs with %q owning the conversation", owner)
				}
			})

			began := time.Now()
			outcome := make(chan string, 1)
			go func() {
				outcome <- leader.d.RunPrompt(context.Background(), core.Prompt{Platform: "http", Channel: conversation, Thread: conversation,
					User: "http", Text: "scheduled", Header: "⏰ s · 09:00", Schedule: "s", Fresh: true, BusyWait: busyWait})
			}()
			ended := false
			select {
			case o := <-outcome:
				ended = true
				if o != core.PromptSkippedBusy {
					t.Errorf("the run ended %q, want %q", o, core.PromptSkippedBusy)
				}
				if took := time.Since(began); took > busyWait+5*time.Second {
					t.Errorf("the run was skipped after %v; busy_wait is %v", took, busyWait)
				}
			case <-time.After(busyWait + 10*time.Second):
				t.Errorf("the run still waits for the person's turn %v after it began; busy_wait is %v", time.Since(began), busyWait)
			}

			if err := os.WriteFile(release, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			var said []string
			for _, line := range strings.Split(<-person, "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok {
					said = append(said, d)
				}
			}
			if evs := decodeEvents(t, said); evs[len(evs)-1].Type != "done" || answerText(evs) != "echo: person" {
				t.Errorf("the person's answer: %+v", evs)
			}
			if !ended {
				t.Logf("once the person's turn ended the run ended %q", <-outcome)
			}
			for _, inv := range enginetest.ReadLog(t, agentLog)[before:] {
				if strings.Contains(inv.Prompt, "scheduled") {
					t.Errorf("the skipped run ran the agent: %q", inv.Prompt)
				}
			}
		})
	}

	// A run that may not wait at all (busy_wait: 0s) still claims a free
	// conversation and runs.
	if o := leader.d.RunPrompt(context.Background(), core.Prompt{Platform: "http", Channel: "free", Thread: "free",
		User: "http", Text: "at once", Header: "⏰ s · 09:00", Schedule: "s", Fresh: true}); o != "done" {
		t.Errorf("a run with busy_wait 0s of a free conversation ended %q, want done", o)
	}
}
