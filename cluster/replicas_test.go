package cluster_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/golem-chat/golem/cluster"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/internal/nettest"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/store/etcdstore"
	"google.golang.org/grpc"
)

// chat is the platform as every replica sees it: one chat that all of them
// post to (as every replica posts to Slack with the same token).
type chat struct {
	mu        sync.Mutex
	next      int
	msgs      map[string]string
	order     []string
	questions []core.Question
	changed   chan struct{}
}

func newChat() *chat { return &chat{msgs: map[string]string{}, changed: make(chan struct{}, 1)} }

func (c *chat) Platform() string                                { return "rec" }
func (c *chat) Start(ctx context.Context, _ core.Handler) error { <-ctx.Done(); return nil }
func (c *chat) Limits() core.Limits                             { return core.Limits{MaxLen: 4000} }
func (c *chat) Measure(s string) int                            { return utf8.RuneCountInString(s) }

func (c *chat) Send(_ context.Context, to core.Place, text string) (core.MessageRef, error) {
	c.mu.Lock()
	defer c.notify()
	defer c.mu.Unlock()
	c.next++
	id := strconv.Itoa(c.next)
	c.msgs[id] = text
	c.order = append(c.order, id)
	return core.MessageRef{Channel: to.Channel, Thread: to.Thread, ID: id}, nil
}

func (c *chat) Edit(_ context.Context, ref core.MessageRef, text string) error {
	c.mu.Lock()
	defer c.notify()
	defer c.mu.Unlock()
	if _, ok := c.msgs[ref.ID]; !ok {
		return fmt.Errorf("no message %q", ref.ID)
	}
	c.msgs[ref.ID] = text
	return nil
}

func (c *chat) SendActivity(context.Context, core.MessageRef, string) error { return nil }

func (c *chat) notify() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

func (c *chat) texts() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.order))
	for i, id := range c.order {
		out[i] = c.msgs[id]
	}
	return out
}

func (c *chat) waitFor(t testing.TB, d time.Duration, what string, cond func([]string) bool) {
	t.Helper()
	deadline := time.After(d)
	for !cond(c.texts()) {
		select {
		case <-c.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for %s; messages: %q", what, c.texts())
		}
	}
}

// count is how many messages contain s.
func count(texts []string, s string) int {
	n := 0
	for _, t := range texts {
		if strings.Contains(t, s) {
			n++
		}
	}
	return n
}

// replica is one golem of the cluster: its etcd client (through a proxy,
// to cut it off), store, membership and dispatcher.
type replica struct {
	name  string
	proxy *nettest.Proxy
	r     *cluster.Etcd
	conv  *cluster.Conversations
	d     *core.Dispatcher
	st    *etcdstore.Store
}

type fleet struct {
	t         testing.TB
	etcd      *etcdtest.Cluster
	chat      *chat
	workspace string
	log       string
	eng       engine.Engine
	// busy is the busy mode of the replicas started next (default queue).
	busy core.Busy
	// maxConcurrent is the max_concurrent of the replicas started next (0:
	// the default).
	maxConcurrent int
	// context is the chat context of the replicas started next (zero: off).
	context core.ContextLimits
}

func newFleet(t testing.TB) *fleet {
	dir := t.TempDir()
	f := &fleet{t: t, etcd: etcdtest.Start(t, 1), chat: newChat(), workspace: dir, log: filepath.Join(dir, "agent.log")}
	f.eng = engine.NewClaudeCode(engine.Config{Command: enginetest.Build(t), Env: map[string]string{"FAKE_AGENT_LOG": f.log}})
	return f
}

func (f *fleet) start(name string, ttl time.Duration) *replica { return f.startWith(name, ttl) }

// startWith starts a replica whose etcd client dials with opts.
func (f *fleet) startWith(name string, ttl time.Duration, opts ...grpc.DialOption) *replica {
	t := f.t
	t.Helper()
	p := nettest.NewProxy(t, f.etcd.Endpoints[0])
	st, err := etcdstore.Open(etcdstore.Config{Endpoints: []string{p.Addr}, Prefix: "golem", Timeout: 2 * time.Second, DialOptions: opts})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := cluster.JoinEtcd(ctx, cluster.EtcdOptions{Client: st.Client(), Prefix: st.Prefix(), Name: name, TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	conv := cluster.NewConversations(r, nil)
	conv.AttachStore(st)
	d, err := core.NewDispatcher(core.Options{
		Engines: map[string]engine.Engine{"claude-code": f.eng}, DefaultEngine: "claude-code",
		Workspace: f.workspace, Allow: []string{"rec:*"}, Timeout: time.Minute, Store: st, Cluster: conv,
		Busy: cmp.Or(f.busy, core.BusyQueue), QueueDepth: 50, MaxConcurrent: f.maxConcurrent, Context: f.context,
	})
	if err != nil {
		t.Fatal(err)
	}
	conv.Bind(d)
	d.Register(f.chat)
	rep := &replica{name: name, proxy: p, r: r, conv: conv, d: d, st: st}
	t.Cleanup(func() {
		p.Heal()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		d.Close(ctx)
		cancel()
		conv.Close()
		r.Close()
		st.Close()
	})
	return rep
}

// waitRuns waits until n agent runs have started, polling the agent's
// log, or fails the test after 10 s.
func (f *fleet) waitRuns(n int) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(enginetest.ReadLog(f.t, f.log)) < n {
		if time.Now().After(deadline) {
			f.t.Fatalf("%d agent runs never started", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func msg(channel string, i int, text string) core.Message {
	return core.Message{Platform: "rec", Channel: channel, ID: fmt.Sprintf("%s-%d", channel, i), EventID: fmt.Sprintf("%s-%d", channel, i),
		User: "alice", Text: text}
}

// Messages to one conversation received by two replicas in turn are
// answered once each, in order, one turn at a time.
func TestOneConversationAcrossReplicas(t *testing.T) {
	f := newFleet(t)
	reps := []*replica{f.start("a", 5*time.Second), f.start("b", 5*time.Second)}
	const n = 8
	for i := range n {
		reps[i%2].d.Handle(context.Background(), msg("C1", i, fmt.Sprintf("!sleep 150ms\nm%d", i)))
		time.Sleep(120 * time.Millisecond)
	}
	f.chat.waitFor(t, 30*time.Second, "every answer", func(texts []string) bool {
		for i := range n {
			if count(texts, fmt.Sprintf("echo: m%d", i)) != 1 {
				return false
			}
		}
		return true
	})
	texts := f.chat.texts()
	for i := range n {
		if c := count(texts, fmt.Sprintf("echo: m%d", i)); c != 1 {
			t.Fatalf("m%d answered %d times: %q", i, c, texts)
		}
	}
	var order []string
	for _, s := range texts {
		if i := strings.Index(s, "echo: m"); i >= 0 {
			order = append(order, s[i+6:i+8])
		}
	}
	for i, o := range order {
		if o != fmt.Sprintf("m%d", i) {
			t.Fatalf("answers out of order: %v", order)
		}
	}
	invs := enginetest.ReadLog(t, f.log)
	if len(invs) != n {
		t.Fatalf("%d agent runs for %d messages", len(invs), n)
	}
	for i := 1; i < len(invs); i++ {
		if gap := time.Duration(invs[i].Started - invs[i-1].Started); gap < 150*time.Millisecond {
			t.Fatalf("run %d began %v after run %d, which sleeps 150 ms: two turns of one conversation overlapped", i, gap, i-1)
		}
		if invs[i].SessionID != invs[0].SessionID {
			t.Fatalf("run %d had session %q, run 0 %q: the session was not carried between replicas", i, invs[i].SessionID, invs[0].SessionID)
		}
	}
}

// A replica cut off from etcd mid-turn stops its agent; another takes the
// conversation over within the TTL and a few seconds: it marks the turn
// interrupted, runs the message that waited behind it, in the same session.
func TestReplicaCutOffMidTurn(t *testing.T) {
	f := newFleet(t)
	const ttl = 2 * time.Second
	a := f.start("a", ttl)
	b := f.start("b", ttl)
	a.d.Handle(context.Background(), msg("C1", 0, "first"))
	f.chat.waitFor(t, 20*time.Second, "the first answer", func(texts []string) bool { return count(texts, "echo: first") == 1 })
	a.d.Handle(context.Background(), msg("C1", 1, "!sleep 30s\nlong"))
	f.waitRuns(2)
	b.d.Handle(context.Background(), msg("C1", 2, "after"))
	long := enginetest.ReadLog(t, f.log)[1].PID
	died := make(chan time.Time, 1)
	go func() { // when a's agent is gone
		for syscall.Kill(long, 0) == nil {
			time.Sleep(2 * time.Millisecond)
		}
		died <- time.Now()
	}()

	cut := time.Now()
	a.proxy.Cut()
	f.chat.waitFor(t, ttl+10*time.Second, "the waiting message answered by b", func(texts []string) bool { return count(texts, "echo: after") == 1 })
	took := time.Since(cut)
	texts := f.chat.texts()
	if count(texts, "restarted while answering") != 1 {
		t.Fatalf("the interrupted turn was not marked once: %q", texts)
	}
	if count(texts, "echo: long") != 0 {
		t.Fatalf("the long turn answered although its replica was cut off: %q", texts)
	}
	invs := enginetest.ReadLog(t, f.log)
	if len(invs) != 3 {
		t.Fatalf("%d agent runs, want 3", len(invs))
	}
	if invs[2].SessionID != invs[0].SessionID {
		t.Fatalf("b's run had session %q, not the conversation's %q", invs[2].SessionID, invs[0].SessionID)
	}
	select {
	case at := <-died:
		if next := time.Unix(0, invs[2].Started); !at.Before(next) {
			t.Fatalf("b's agent started %v before a's was gone", at.Sub(next))
		}
		t.Logf("a's agent was gone %v after the cut, %v before b's started", at.Sub(cut), time.Unix(0, invs[2].Started).Sub(at))
	case <-time.After(5 * time.Second):
		t.Fatal("a's agent outlived its replica's membership")
	}
	if took > ttl+5*time.Second {
		t.Fatalf("takeover took %v, over replica_ttl + 5 s", took)
	}
	t.Logf("b answered the waiting message %v after a was cut off", took)
}

// While one replica runs a conversation, another's writes to its records
// are refused (a replica that lost its lease while cut off is such a
// one), and the owner's go through.
func TestWritesOfAnotherReplicaAreFenced(t *testing.T) {
	f := newFleet(t)
	a := f.start("a", 5*time.Second)
	b := f.start("b", 5*time.Second)
	a.d.Handle(context.Background(), msg("C1", 0, "!sleep 3s\nlong"))
	f.waitRuns(1)
	key := store.NewKey("rec", "", "C1", "")
	err := b.st.UpdateConversation(key, func(c *store.Conversation) bool { c.SessionID = "stale"; return true })
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("b's write to a's conversation: %v, want ErrFenced", err)
	}
	if err := b.st.BeginTurn(store.InFlight{ID: "stale", Key: key}); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("b's turn record in a's conversation: %v, want ErrFenced", err)
	}
	if err := a.st.UpdateConversation(key, func(c *store.Conversation) bool { c.Model = "m"; return true }); err != nil {
		t.Fatalf("the owner's write: %v", err)
	}
	other := store.NewKey("rec", "", "C2", "")
	if err := b.st.SaveConversation(store.Conversation{Key: other, Model: "x"}); err != nil {
		t.Fatalf("b's write to a conversation nobody owns: %v", err)
	}
}

// Ask posts a question as a message, as a platform with buttons does.
func (c *chat) Ask(ctx context.Context, q core.Question) (core.MessageRef, error) {
	c.mu.Lock()
	c.questions = append(c.questions, q)
	c.mu.Unlock()
	return c.Send(ctx, q.Place, q.Text)
}

func (c *chat) Settle(ctx context.Context, ref core.MessageRef, text string) error {
	return c.Edit(ctx, ref, text)
}

func (c *chat) question(t *testing.T) core.Question {
	t.Helper()
	c.waitFor(t, 10*time.Second, "a question", func([]string) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.questions) > 0
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.questions[len(c.questions)-1]
}

// A click on the approval buttons may reach any replica (the one holding
// Discord's gateway, Slack's connection that got the envelope): it reaches
// the replica whose turn waits for it, and that turn goes on.
func TestClickReachesTheReplicaWhoseTurnWaits(t *testing.T) {
	f := newFleet(t)
	a, b := f.start("a", 2*time.Second), f.start("b", 2*time.Second)
	ctx := context.Background()
	a.d.Handle(ctx, msg("C1", 0, "!ask Write {\"file_path\":\"/w/a.txt\",\"content\":\"x\"}\nwritten"))
	q := f.chat.question(t)
	if owner := b.conv.Owner(core.KeyFor(msg("C1", 0, ""), "")); owner != "a" {
		t.Fatalf("C1 is owned by %q, want a", owner)
	}

	clicked := time.Now()
	res := b.d.HandleAction(ctx, core.Action{Platform: "rec", Channel: "C1", User: "alice", UserName: "alice", Data: q.Choices[0].Data})
	took := time.Since(clicked)
	if res.Err != nil || !strings.Contains(res.Settled, "allowed by alice") {
		t.Fatalf("the click on the other replica: %+v", res)
	}
	t.Logf("a click on the replica without the turn decided it in %v", took.Round(time.Millisecond))
	if took > time.Second {
		t.Errorf("the forwarded click took %v, want at most 1 s", took)
	}
	f.chat.waitFor(t, 10*time.Second, "the agent going on", func(texts []string) bool { return count(texts, "echo: written") == 1 })

	again := b.d.HandleAction(ctx, core.Action{Platform: "rec", Channel: "C1", User: "alice", Data: q.Choices[0].Data})
	if again.Err == nil {
		t.Errorf("a second click on the decided question: %+v", again)
	}
	unknown := b.d.HandleAction(ctx, core.Action{Platform: "rec", Channel: "C1", User: "alice", Data: "golem:allow:00000000"})
	if !errors.Is(unknown.Err, core.ErrUnknownRequest) {
		t.Errorf("a click no turn waits for: %+v", unknown)
	}
}

// A message waiting for one of max_concurrent's slots on a replica that is
// cut off is not lost: its mail stays until its turn begins, so the
// replica that takes its conversation over runs it, and the cut-off one
// says nothing of it.
func TestMessageWaitingForASlotMovesWithItsConversation(t *testing.T) {
	f := newFleet(t)
	const ttl = 2 * time.Second
	f.maxConcurrent = 1
	a := f.start("a", ttl)
	b := f.start("b", ttl)
	a.d.Handle(context.Background(), msg("C1", 0, "!sleep 30s\nlong"))
	f.waitRuns(1)
	a.d.Handle(context.Background(), msg("C2", 0, "waiting"))
	for _, waiting := a.d.Load(); waiting != 1; _, waiting = a.d.Load() {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // C2's worker takes it from the queue to wait for the slot

	a.proxy.Cut()
	f.chat.waitFor(t, ttl+10*time.Second, "the message that waited for a slot, answered by b", func(texts []string) bool {
		return count(texts, "echo: waiting") == 1
	})
	texts := f.chat.texts()
	if n := count(texts, "stopped"); n != 0 {
		t.Fatalf("%d notices of a stopped turn: the cut-off replica is to stop its turns quietly: %q", n, texts)
	}
	if invs := enginetest.ReadLog(t, f.log); len(invs) != 2 {
		t.Fatalf("%d agent runs, want 2 (C1's on a, C2's on b)", len(invs))
	}
	t.Logf("b took over: %q", texts)
	_ = b
}

// A platform's event delivered twice, to two replicas at once (Slack's
// retry of an envelope acked late), runs once: its event id is seen in
// the transaction that puts it in the mailbox.
func TestARedeliveredEventRunsOnceAcrossReplicas(t *testing.T) {
	f := newFleet(t)
	a, b := f.start("a", 2*time.Second), f.start("b", 2*time.Second)
	ctx := context.Background()
	for i := range 5 {
		m := msg("C1", i, fmt.Sprintf("twice %d", i))
		var wg sync.WaitGroup
		for _, r := range []*replica{a, b} {
			wg.Go(func() { r.d.Handle(ctx, m) })
		}
		wg.Wait()
	}
	f.chat.waitFor(t, 20*time.Second, "five answers", func(texts []string) bool { return count(texts, "echo: twice") == 5 })
	time.Sleep(500 * time.Millisecond) // a second run would have begun by now
	if runs := enginetest.ReadLog(t, f.log); len(runs) != 5 {
		t.Errorf("%d agent runs for 5 events delivered twice each", len(runs))
	}
	if n := count(f.chat.texts(), "echo: twice"); n != 5 {
		t.Errorf("%d answers, want 5", n)
	}
}

// An HTTP request (its answer streams back to whoever asked, so it cannot
// move) to a replica while another replica runs its conversation waits
// for that turn, then runs here, in the same session.
func TestAStreamWaitsForTheOtherReplicasTurn(t *testing.T) {
	f := newFleet(t)
	a, b := f.start("a", 2*time.Second), f.start("b", 2*time.Second)
	ctx := context.Background()
	a.d.Handle(ctx, msg("C1", 0, "!sleep 800ms\nfirst"))
	f.waitRuns(1)

	var mu sync.Mutex
	var text strings.Builder
	done := make(chan parser.Event, 1)
	m := msg("C1", 1, "second")
	m.EventID = "" // as the HTTP API's
	m.Sink = func(evs ...parser.Event) {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range evs {
			switch ev.Type {
			case parser.Text:
				text.WriteString(ev.Content)
			case parser.Done, parser.Error:
				done <- ev
			}
		}
	}
	b.d.Handle(ctx, m)
	select {
	case ev := <-done:
		if ev.Type != parser.Done {
			t.Fatalf("the stream ended with %+v", ev)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stream never ended")
	}
	mu.Lock()
	got := text.String()
	mu.Unlock()
	if !strings.Contains(got, "echo: second") {
		t.Fatalf("the stream said %q", got)
	}
	runs := enginetest.ReadLog(t, f.log)
	if len(runs) != 2 {
		t.Fatalf("%d agent runs, want 2", len(runs))
	}
	if gap := time.Duration(runs[1].Started - runs[0].Started); gap < 800*time.Millisecond {
		t.Errorf("the stream's turn began %v after the other replica's, inside its 800 ms", gap)
	}
	if resumed, _ := runs[1].Flag("--resume"); resumed != runs[0].SessionID {
		t.Errorf("the stream's turn resumed %q, want %q", resumed, runs[0].SessionID)
	}
	f.chat.waitFor(t, 10*time.Second, "the first answer", func(texts []string) bool { return count(texts, "echo: first") == 1 })
}

// The messages /stop drops are struck from the mailbox: the conversation
// is let go of once idle, and no replica runs them later.
func TestStopDropsWaitingMessagesFromTheMailbox(t *testing.T) {
	f := newFleet(t)
	a := f.start("a", 5*time.Second)
	key := store.Key{Platform: "rec", Channel: "C1"}
	a.d.Handle(context.Background(), msg("C1", 0, "!sleep 30s\nlong"))
	f.waitRuns(1)
	a.d.Handle(context.Background(), msg("C1", 1, "queued"))
	a.d.Handle(context.Background(), msg("C1", 2, "/stop"))
	f.chat.waitFor(t, 10*time.Second, "the stop's answer", func(texts []string) bool { return count(texts, "waiting messages dropped") == 1 })
	deadline := time.Now().Add(10 * time.Second)
	for a.conv.Owner(key) != "" {
		if time.Now().After(deadline) {
			t.Fatalf("the conversation is still owned by %q after /stop; messages: %q", a.conv.Owner(key), f.chat.texts())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(enginetest.ReadLog(t, f.log)); n != 1 {
		t.Fatalf("%d agent runs, want 1: the dropped message ran", n)
	}
}

// A mailbox transaction etcd applied but whose answer was lost (a timeout
// on the way back) is not taken for a failure: the message runs once, and
// the person is not told to send it again (which would run it twice).
func TestAMailboxWriteWhoseAnswerWasLostRunsOnce(t *testing.T) {
	f := newFleet(t)
	var lose atomic.Bool
	loseAnswer := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if strings.HasSuffix(method, "/Txn") && err == nil && lose.CompareAndSwap(true, false) {
			return context.DeadlineExceeded
		}
		return err
	}
	a := f.startWith("a", 2*time.Second, grpc.WithChainUnaryInterceptor(loseAnswer))
	lose.Store(true)
	a.d.Handle(context.Background(), msg("C1", 0, "lost answer"))
	f.chat.waitFor(t, 15*time.Second, "the answer", func(texts []string) bool { return count(texts, "echo: lost answer") == 1 })
	time.Sleep(500 * time.Millisecond)
	if texts := f.chat.texts(); count(texts, "could not save") != 0 || count(texts, "echo: lost answer") != 1 {
		t.Errorf("messages: %q", texts)
	}
	if runs := enginetest.ReadLog(t, f.log); len(runs) != 1 {
		t.Errorf("%d agent runs, want 1", len(runs))
	}
}

// A message steered into a running turn (acknowledged in the chat) whose
// replica is cut off before the agent read it is not lost: it stays in
// the mailbox and the next owner runs it as a turn of its own.
func TestASteeredMessageOutlivesItsReplica(t *testing.T) {
	f := newFleet(t)
	f.busy = core.BusySteer
	const ttl = 2 * time.Second
	a := f.start("a", ttl)
	f.start("b", ttl)
	a.d.Handle(context.Background(), msg("C1", 0, "!text 10\n!hang"))
	f.waitRuns(1)
	f.chat.waitFor(t, 10*time.Second, "the running answer", func(texts []string) bool { return len(texts) > 0 })
	a.d.Handle(context.Background(), msg("C1", 1, "steered in"))
	time.Sleep(300 * time.Millisecond) // written to the agent, which is not reading
	a.proxy.Cut()
	f.chat.waitFor(t, ttl+15*time.Second, "the steered message run by b", func(texts []string) bool { return count(texts, "echo: steered in") == 1 })
	if runs := enginetest.ReadLog(t, f.log); len(runs) != 2 || !strings.Contains(runs[1].Prompt, "steered in") {
		t.Fatalf("agent runs %d, the second %q", len(runs), runs[len(runs)-1].Prompt)
	}
}
