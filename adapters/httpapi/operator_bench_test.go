package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/store"
)

// BenchmarkConversations10k measures GET /v1/conversations (its first
// page of 50, as the page asks) over HTTP with 10,000 conversations in a
// bbolt store, each with a month's usage, and reports the median.
func BenchmarkConversations10k(b *testing.B) {
	st, err := store.Open(filepath.Join(b.TempDir(), "golem.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	now := time.Now()
	var wg sync.WaitGroup
	for w := range 8 { // concurrent writers share commits
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 10000; i += 8 {
				k := store.NewKey("slack", "T1", fmt.Sprintf("C%05d", i), "")
				if err := st.SaveConversation(store.Conversation{Key: k, Engine: "claude-code", SessionID: "s", LastUsed: now.Add(-time.Duration(i) * time.Second)}); err != nil {
					b.Error(err)
					return
				}
				if err := st.AddUsage(k, "slack:U1", now, store.Usage{Turns: 1, InputTokens: 100, CostUSD: 0.01}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	d, err := core.NewDispatcher(core.Options{Engines: map[string]engine.Engine{"claude-code": engine.NewClaudeCode(engine.Config{})},
		DefaultEngine: "claude-code", Store: st, Workspace: b.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Close(context.Background()) })
	ln, base := listen(b)
	s, err := New(Options{Listener: ln, Logger: slog.New(slog.DiscardHandler), Operator: d, Store: st})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx, d) }()
	b.Cleanup(func() { cancel(); <-done })

	var took []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		res, err := http.Get(base + "/v1/conversations")
		if err != nil {
			b.Fatal(err)
		}
		var page listing
		err = json.NewDecoder(res.Body).Decode(&page)
		res.Body.Close()
		if err != nil || len(page.Conversations) != DefaultPageSize || page.Next == nil || page.Conversations[0].Month.Turns != 1 {
			b.Fatalf("page %+v, %v", page.Next, err)
		}
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms")
}
