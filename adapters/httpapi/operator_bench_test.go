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
	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/store/etcdstore"
)

// BenchmarkConversations10k measures GET /v1/conversations (its first
// page of 50, as the page asks) over HTTP with 10,000 conversations (the
// newest 200 with a month's usage), in bbolt and in one etcd member, and reports the
// median.
func BenchmarkConversations10k(b *testing.B) {
	backends := []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"bbolt", func(b *testing.B) store.Store {
			st, err := store.Open(filepath.Join(b.TempDir(), "golem.db"))
			if err != nil {
				b.Fatal(err)
			}
			return st
		}},
		{"etcd", func(b *testing.B) store.Store {
			st, err := etcdstore.Open(etcdstore.Config{Endpoints: etcdtest.Start(b, 1).Endpoints, Prefix: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			return st
		}},
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) { benchConversations(b, be.open(b)) })
	}
}

func benchConversations(b *testing.B, st store.Store) {
	b.Cleanup(func() { st.Close() })
	now := time.Now()
	var wg sync.WaitGroup
	for w := range 16 { // concurrent writers share commits
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 10000; i += 16 {
				k := store.NewKey("slack", "T1", fmt.Sprintf("C%05d", i), "")
				if err := st.SaveConversation(store.Conversation{Key: k, Engine: "claude-code", SessionID: "s", LastUsed: now.Add(-time.Duration(i) * time.Second)}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := range 200 { // the newest, which the first page shows; one writer: all add to everyone's totals
		k := store.NewKey("slack", "T1", fmt.Sprintf("C%05d", i), "")
		if err := st.AddUsage(k, "slack:U1", now, store.Usage{Turns: 1, InputTokens: 100, CostUSD: 0.01}); err != nil {
			b.Fatal(err)
		}
	}
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
