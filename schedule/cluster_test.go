package schedule_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
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
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/store/etcdstore"
	clientv3 "go.etcd.io/etcd/client/v3"
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

// replicas starts replicas of those names sharing conversations over one
// etcd, with the fake agent logging to log, all posting to one chat; wrap,
// when given, stands between a replica's dispatcher and its cluster.
func replicas(t *testing.T, log string, wrap func(*cluster.Conversations) core.Cluster, names ...string) ([]*core.Dispatcher, *recChat, *etcdstore.Store) {
	c := etcdtest.Start(t, 1)
	dir := filepath.Dir(log)
	eng := engine.NewClaudeCode(engine.Config{Command: enginetest.Build(t), Env: map[string]string{"FAKE_AGENT_LOG": log}})
	chat := &recChat{}
	var ds []*core.Dispatcher
	var first *etcdstore.Store
	for _, name := range names {
		st, err := etcdstore.Open(etcdstore.Config{Endpoints: c.Endpoints, Prefix: "golem"})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = st
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := cluster.JoinEtcd(ctx, cluster.EtcdOptions{Client: st.Client(), Prefix: st.Prefix(), Name: name, TTL: 5 * time.Second})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		conv := cluster.NewConversations(r, nil)
		conv.AttachStore(st)
		var cl core.Cluster = conv
		if wrap != nil {
			cl = wrap(conv)
		}
		d, err := core.NewDispatcher(core.Options{Engines: map[string]engine.Engine{"claude-code": eng}, DefaultEngine: "claude-code",
			Workspace: dir, Allow: []string{"rec:*"}, Timeout: time.Minute, Store: st, Cluster: cl, Busy: core.BusyQueue})
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
	return ds, chat, first
}

// TestPromptWithReplicas: with replicas sharing conversations over etcd, a
// scheduled run on the replica leading the schedules, for a conversation
// whose person's turn runs on another replica, waits for it to end and
// then runs after it (never beside it); one that cannot wait long enough
// is skipped.
func TestPromptWithReplicas(t *testing.T) {
	log := filepath.Join(t.TempDir(), "agent.log")
	ds, chat, _ := replicas(t, log, nil, "leader", "owner")
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

// claimFirst is a replica's real Cluster whose Owner, the read a scheduled
// run makes before it claims its conversation, answers as of just before
// a person's message came: it runs hook first, once.
type claimFirst struct {
	*cluster.Conversations
	mu   sync.Mutex
	hook func()
}

func (c *claimFirst) Owner(key store.Key) string {
	owner := c.Conversations.Owner(key)
	c.mu.Lock()
	hook := c.hook
	c.hook = nil
	c.mu.Unlock()
	if hook != nil {
		hook()
	}
	return owner
}

// TestPromptBehindAMessageThatCameFirst: a scheduled run of a chat (its
// message goes through the conversation's mailbox) that finds its
// conversation free, and then finds a person's message on this replica
// claimed it first, is not queued behind the person's turn: it waits
// busy_wait and is skipped, its mail struck, so that it runs nowhere
// later.
func TestPromptBehindAMessageThatCameFirst(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "agent.log")
	var leader *claimFirst
	ds, chat, st := replicas(t, log, func(c *cluster.Conversations) core.Cluster {
		leader = &claimFirst{Conversations: c}
		return leader
	}, "leader")
	release := filepath.Join(dir, "go")
	leader.hook = func() { // on RunPrompt's goroutine
		ds[0].Handle(context.Background(), core.Message{Platform: "rec", Channel: "C1", ID: "m1", EventID: "m1",
			User: "alice", Text: "!sh while [ ! -f " + release + " ]; do sleep 0.01; done\nperson"})
		for deadline := time.Now().Add(10 * time.Second); len(enginetest.ReadLog(t, log)) == 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Error("the person's turn did not start")
				return
			}
		}
	}
	const busyWait = 300 * time.Millisecond
	outcome := make(chan string, 1)
	go func() {
		outcome <- ds[0].RunPrompt(context.Background(), core.Prompt{Platform: "rec", Channel: "C1", User: "alice", Text: "scheduled",
			Header: "⏰ s · 09:00", Fresh: true, BusyWait: busyWait})
	}()
	ended := false
	select {
	case o := <-outcome:
		ended = true
		if o != core.PromptSkippedBusy {
			t.Errorf("the run ended %q, want %q", o, core.PromptSkippedBusy)
		}
	case <-time.After(busyWait + 10*time.Second):
		t.Errorf("the run still waits for the person's turn; busy_wait is %v", busyWait)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := st.Client().Get(ctx, st.Prefix(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if k := string(kv.Key); strings.Contains(k, "/mail/") && strings.Contains(k, url.PathEscape("rec::C1")) {
			if mail, err := st.Client().Get(ctx, k); err == nil && len(mail.Kvs) > 0 && strings.Contains(string(mail.Kvs[0].Value), "scheduled") {
				t.Errorf("the skipped run's mail is left in the mailbox: %s", k)
			}
		}
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !chat.has("echo: person"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the person's answer did not come: %q", chat.msgs)
		}
	}
	if !ended {
		t.Logf("once the person's turn ended the run ended %q", <-outcome)
	}
	for _, inv := range enginetest.ReadLog(t, log) {
		if strings.Contains(inv.Prompt, "scheduled") {
			t.Errorf("the skipped run ran the agent")
		}
	}
}
