package etcdstore_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/store/etcdstore"
)

// BenchmarkTurnPath makes the store calls of one turn, in the order core
// makes them (core's BenchmarkStoreCallsPerTurn counts them: 8 with the
// budgets on, a 9th BeginTurn for an agent CLI's process), on bbolt, one
// etcd member and a cluster of three, all on this machine. The first four
// come before the answer's first text (Handle's MarkSeen and UsageTotals,
// the turn's Conversation and BeginTurn); reports their sum's median
// (first-text-ms), the whole turn's median (turn-ms) and the slowest
// call's median (max-call-ms).
func BenchmarkTurnPath(b *testing.B) {
	backends := []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"bbolt", func(b *testing.B) store.Store {
			s, err := store.Open(filepath.Join(b.TempDir(), "golem.db"))
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"etcd-1", func(b *testing.B) store.Store { return openEtcd(b, etcdtest.Start(b, 1)) }},
		{"etcd-3", func(b *testing.B) store.Store { return openEtcd(b, etcdtest.Start(b, 3)) }},
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			s := be.open(b)
			defer s.Close()
			key := store.NewKey("slack", "T1", "C1", "")
			now := time.Now()
			var firstText, turn []time.Duration
			calls := make([][]time.Duration, 8)
			b.ResetTimer()
			for i := range b.N {
				id := strconv.Itoa(i)
				steps := []func() error{
					func() error { _, err := s.MarkSeen("slack:Ev"+id, 24*time.Hour); return err },
					func() error { _, err := s.UsageTotals(key, "slack:U1", now); return err },
					func() error { _, err := s.Conversation(key); return err },
					func() error {
						return s.BeginTurn(store.InFlight{ID: id, Key: key, Platform: "slack", Channel: "C1", Started: now})
					},
					func() error {
						return s.BeginTurn(store.InFlight{ID: id, Key: key, Platform: "slack", Channel: "C1", Started: now,
							AnswerChannel: "C1", AnswerID: "1.0"})
					},
					func() error {
						return s.UpdateConversation(key, func(c *store.Conversation) bool { c.SessionID = "s" + id; return true })
					},
					func() error { return s.AddUsage(key, "slack:U1", now, store.Usage{Turns: 1, InputTokens: 10}) },
					func() error { return s.EndTurn(id) },
				}
				start := time.Now()
				for j, step := range steps {
					t := time.Now()
					if err := step(); err != nil {
						b.Fatal(err)
					}
					calls[j] = append(calls[j], time.Since(t))
					if j == 3 {
						firstText = append(firstText, time.Since(start))
					}
				}
				turn = append(turn, time.Since(start))
			}
			b.StopTimer()
			var slowest time.Duration
			for _, c := range calls {
				slowest = max(slowest, median(c))
			}
			b.ReportMetric(ms(median(firstText)), "first-text-ms")
			b.ReportMetric(ms(median(turn)), "turn-ms")
			b.ReportMetric(ms(slowest), "max-call-ms")
		})
	}
}

func openEtcd(b *testing.B, c *etcdtest.Cluster) store.Store {
	s, err := etcdstore.Open(etcdstore.Config{Endpoints: c.Endpoints, Prefix: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkListConversations10k reads the key and last use of 10,000
// conversations, with their sessions, from one etcd member: what the
// operator's listing reads per request on a replica. Reports the median.
func BenchmarkListConversations10k(b *testing.B) {
	s := openEtcd(b, etcdtest.Start(b, 1))
	defer s.Close()
	now := time.Now()
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 10000; i += 32 {
				c := store.Conversation{Key: store.NewKey("slack", "T1", fmt.Sprintf("C%05d", i), ""), Engine: "claude-code",
					SessionID: "0f9c2d6e-3b1a-4e8f-9a7c-5d2e1f0b3c4a", Sessions: []string{"0f9c2d6e-3b1a-4e8f-9a7c-5d2e1f0b3c4a"},
					LastUsed: now.Add(-time.Duration(i) * time.Second)}
				if err := s.SaveConversation(c); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var took []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		got, err := s.ListConversations()
		if err != nil || len(got) != 10000 {
			b.Fatalf("listed %d, %v", len(got), err)
		}
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(ms(median(took)), "median-ms")
}
