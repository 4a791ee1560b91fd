package schedule_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/cluster"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/store/etcdstore"
)

// recChat is one chat every replica posts to, as every replica posts to
// Slack with the same token.
type recChat struct {
	mu   sync.Mutex
	msgs []string
}

func (c *recChat) Platform() string                                { return "rec" }
func (c *recChat) Start(ctx context.Context, _ core.Handler) error { <-ctx.Done(); return nil }
func (c *recChat) Limits() core.Limits                             { return core.Limits{MaxLen: 4000} }
func (c *recChat) Measure(s string) int                            { return len(s) }
func (c *recChat) SendActivity(context.Context, core.MessageRef, string) error {
	return nil
}
func (c *recChat) Send(_ context.Context, to core.Place, text string) (core.MessageRef, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, text)
	return core.MessageRef{Channel: to.Channel, ID: strconv.Itoa(len(c.msgs) - 1)}, nil
}
func (c *recChat) Edit(_ context.Context, ref core.MessageRef, text string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, _ := strconv.Atoi(ref.ID)
	c.msgs[i] = text
	return nil
}
func (c *recChat) has(s string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.msgs {
		if m == s {
			return true
		}
	}
	return false
}

// TestPromptWithReplicas: with replicas sharing conversations over etcd, a
// scheduled run on the replica leading the schedules, for a conversation
// whose person's turn runs on another replica, waits for it to end and
// then runs after it (never beside it); one that cannot wait long enough
// is skipped.
func TestPromptWithReplicas(t *testing.T) {
	c := etcdtest.Start(t, 1)
	dir := t.TempDir()
	log := filepath.Join(dir, "agent.log")
	eng := engine.NewClaudeCode(engine.Config{Command: enginetest.Build(t), Env: map[string]string{"FAKE_AGENT_LOG": log}})
	chat := &recChat{}
	var ds []*core.Dispatcher
	for _, name := range []string{"leader", "owner"} {
		st, err := etcdstore.Open(etcdstore.Config{Endpoints: c.Endpoints, Prefix: "golem"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := cluster.JoinEtcd(ctx, cluster.EtcdOptions{Client: st.Client(), Prefix: st.Prefix(), Name: name, TTL: 5 * time.Second})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		conv := cluster.NewConversations(r, nil)
		st.SetFence(conv.Fence)
		d, err := core.NewDispatcher(core.Options{Engines: map[string]engine.Engine{"claude-code": eng}, DefaultEngine: "claude-code",
			Workspace: dir, Allow: []string{"rec:*"}, Timeout: time.Minute, Store: st, Cluster: conv, Busy: core.BusyQueue})
		if err != nil {
			t.Fatal(err)
		}
		conv.Bind(d)
		d.Register(chat)
		ds = append(ds, d)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			d.Close(ctx)
			cancel()
			conv.Close()
			r.Close()
			st.Close()
		})
	}
	prompt := func(wait time.Duration, text string) core.Prompt {
		return core.Prompt{Platform: "rec", Channel: "C1", User: "alice", Text: text, Header: "⏰ s · 09:00", Fresh: true, BusyWait: wait}
	}
	person := func(i int) {
		ds[1].Handle(context.Background(), core.Message{Platform: "rec", Channel: "C1", ID: fmt.Sprint("m", i), EventID: fmt.Sprint("m", i),
			User: "alice", Text: "!sleep 1500ms\nperson"})
		for deadline := time.Now().Add(10 * time.Second); len(enginetest.ReadLog(t, log)) < i; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the person's turn did not start")
			}
		}
	}

	person(1) // owned by the other replica while it runs
	if o := ds[0].RunPrompt(context.Background(), prompt(20*time.Second, "scheduled")); o != "done" {
		t.Fatalf("the run ended %q, want done", o)
	}
	if !chat.has("⏰ s · 09:00\n\necho: scheduled") {
		t.Errorf("no answer of the run: %q", chat.msgs)
	}
	invs := enginetest.ReadLog(t, log)
	if len(invs) != 2 || !strings.Contains(invs[1].Prompt, "scheduled") {
		t.Fatalf("runs %+v", invs)
	}
	if gap := time.Duration(invs[1].Started - invs[0].Started); gap < 1500*time.Millisecond {
		t.Errorf("the scheduled run began %v after the person's, which sleeps 1.5 s: they overlapped", gap)
	}

	person(3)
	if o := ds[0].RunPrompt(context.Background(), prompt(200*time.Millisecond, "too soon")); o != core.PromptSkippedBusy {
		t.Errorf("a run that cannot wait ended %q, want %q", o, core.PromptSkippedBusy)
	}
}
