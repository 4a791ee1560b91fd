package core_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/store"
)

// countingStore counts the store calls made through it, by method, and
// tells ended when a turn's record is struck.
type countingStore struct {
	store.Store
	mu    sync.Mutex
	calls map[string]int
	ended chan struct{}
}

func (c *countingStore) hit(name string) {
	c.mu.Lock()
	c.calls[name]++
	c.mu.Unlock()
}

func (c *countingStore) Conversation(k store.Key) (store.Conversation, error) {
	c.hit("Conversation")
	return c.Store.Conversation(k)
}
func (c *countingStore) SaveConversation(v store.Conversation) error {
	c.hit("SaveConversation")
	return c.Store.SaveConversation(v)
}
func (c *countingStore) UpdateConversation(k store.Key, fn func(*store.Conversation) bool) error {
	c.hit("UpdateConversation")
	return c.Store.UpdateConversation(k, fn)
}
func (c *countingStore) ClearSession(k store.Key) error {
	c.hit("ClearSession")
	return c.Store.ClearSession(k)
}
func (c *countingStore) MarkSeen(id string, ttl time.Duration) (bool, error) {
	c.hit("MarkSeen")
	return c.Store.MarkSeen(id, ttl)
}
func (c *countingStore) BeginTurn(t store.InFlight) error {
	c.hit("BeginTurn")
	return c.Store.BeginTurn(t)
}
func (c *countingStore) FinishTurn(e store.TurnEnd) error {
	c.hit("FinishTurn")
	return c.Store.FinishTurn(e)
}
func (c *countingStore) EndTurn(id string) error {
	c.hit("EndTurn")
	err := c.Store.EndTurn(id)
	c.ended <- struct{}{}
	return err
}
func (c *countingStore) InFlightTurns() ([]store.InFlight, error) {
	c.hit("InFlightTurns")
	return c.Store.InFlightTurns()
}
func (c *countingStore) SaveApproval(a store.Approval) error {
	c.hit("SaveApproval")
	return c.Store.SaveApproval(a)
}
func (c *countingStore) Approvals(pending bool) ([]store.Approval, error) {
	c.hit("Approvals")
	return c.Store.Approvals(pending)
}
func (c *countingStore) AddUsage(k store.Key, user string, at time.Time, u store.Usage) error {
	c.hit("AddUsage")
	return c.Store.AddUsage(k, user, at, u)
}
func (c *countingStore) UsageTotals(k store.Key, user string, at time.Time) (store.UsageTotals, error) {
	c.hit("UsageTotals")
	return c.Store.UsageTotals(k, user, at)
}
func (c *countingStore) Load(key string) ([]byte, error) { c.hit("Load"); return c.Store.Load(key) }
func (c *countingStore) Save(key string, v []byte) error { c.hit("Save"); return c.Store.Save(key, v) }

// BenchmarkStoreCallsPerTurn counts the store calls of one turn from a
// platform message (with its event id, as every platform's has) to the
// answer's end, one turn at a time in one conversation, with the bbolt
// store and budgets set (so the turn checks the usage totals): reports
// store-calls/turn and logs them by method. store/etcdstore's
// BenchmarkTurnPath times the same calls on bbolt and etcd.
func BenchmarkStoreCallsPerTurn(b *testing.B) {
	st, err := store.Open(filepath.Join(b.TempDir(), "golem.db"))
	if err != nil {
		b.Fatal(err)
	}
	tokensIn, tokensOut := int64(10), int64(20)
	cs := &countingStore{Store: st, calls: map[string]int{}, ended: make(chan struct{}, 1)}
	eng := &scripted{script: func(engine.Turn) []parser.Event {
		return []parser.Event{{Type: parser.Text, Content: "Hello."}, {Type: parser.Done, SessionID: "s",
			Stats: &parser.RunStats{InputTokens: &tokensIn, OutputTokens: &tokensOut}}}
	}}
	d, err := core.NewDispatcher(core.Options{
		Engines: map[string]engine.Engine{"claude-code": eng}, DefaultEngine: "claude-code",
		Store: cs, Workspace: b.TempDir(), Allow: []string{"*"}, MaxConcurrent: 1,
		Budgets: core.Budgets{DailyUSDPerUser: 100}, Logger: discardLogger(),
	})
	if err != nil {
		b.Fatal(err)
	}
	d.Register(&signal{limits: core.Limits{MaxLen: 4000}})
	b.Cleanup(func() { _ = d.Close(context.Background()); _ = st.Close() })
	cs.mu.Lock()
	clear(cs.calls) // what NewDispatcher read at start is not a turn's
	cs.mu.Unlock()
	b.ResetTimer()
	for i := range b.N {
		d.Handle(context.Background(), core.Message{Platform: "bench", Channel: "C", User: "u", Text: "hi",
			ID: strconv.Itoa(i), EventID: "ev" + strconv.Itoa(i)})
		<-cs.ended
	}
	b.StopTimer()
	_ = d.Close(context.Background())
	cs.mu.Lock()
	defer cs.mu.Unlock()
	total := 0
	var names []string
	for name, n := range cs.calls {
		total += n
		names = append(names, name)
	}
	sort.Strings(names)
	var by []string
	for _, name := range names {
		by = append(by, fmt.Sprintf("%s %.1f", name, float64(cs.calls[name])/float64(b.N)))
	}
	b.ReportMetric(float64(total)/float64(b.N), "store-calls/turn")
	b.Logf("store calls per turn: %s", strings.Join(by, ", "))
}

// Handle makes no store call on the platform's receive path but the
// dedupe's: the budget is read on the conversation's goroutine.
func TestHandleMakesNoStoreCallButTheDedupe(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "golem.db"))
	if err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Store: st, calls: map[string]int{}, ended: make(chan struct{}, 16)}
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(1)
	d, err := core.NewDispatcher(core.Options{
		Engines: map[string]engine.Engine{"claude-code": &holdEngine{release: release, started: &started}}, DefaultEngine: "claude-code",
		Store: cs, Workspace: t.TempDir(), Allow: []string{"*"}, Busy: core.BusyQueue,
		Budgets: core.Budgets{DailyUSDPerUser: 100}, Logger: discardLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	d.Register(&signal{limits: core.Limits{MaxLen: 4000}})
	t.Cleanup(func() { close(release); _ = d.Close(context.Background()); _ = st.Close() })
	d.Handle(context.Background(), core.Message{Platform: "bench", Channel: "C", User: "u", Text: "first", ID: "1", EventID: "e1"})
	started.Wait() // the conversation's goroutine holds the turn: nothing else of it runs now
	for {          // its answer is posted, and the turn's record names it (a second BeginTurn)
		cs.mu.Lock()
		n := cs.calls["BeginTurn"]
		cs.mu.Unlock()
		if n >= 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cs.mu.Lock()
	clear(cs.calls)
	cs.mu.Unlock()
	d.Handle(context.Background(), core.Message{Platform: "bench", Channel: "C", User: "u", Text: "second", ID: "2", EventID: "e2"})
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if fmt.Sprint(cs.calls) != "map[MarkSeen:1]" {
		t.Errorf("Handle made the store calls %v, want only MarkSeen", cs.calls)
	}
}
