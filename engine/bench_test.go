package engine_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/parser"
)

// BenchmarkFirstEvent measures the engine's overhead: from the fake CLI
// writing its first answer line (the "!stamp" directive puts the wall-clock
// time in it) to that line's text event arriving on Run.Events. Each
// iteration is one run; it reports the median and the 99th percentile.
//
//	go test -run '^$' -bench FirstEvent -benchtime 300x ./engine/
func BenchmarkFirstEvent(b *testing.B) {
	for _, name := range []string{"claude-code", "cursor"} {
		b.Run(name, func(b *testing.B) {
			e, _ := fake(b, name, engine.Config{})
			workdir := b.TempDir()
			latencies := make([]time.Duration, 0, b.N)
			for b.Loop() {
				r, err := e.Run(context.Background(), engine.Turn{Prompt: "!stamp", Workdir: workdir})
				if err != nil {
					b.Fatal(err)
				}
				first := true
				for ev := range r.Events() {
					if !first || ev.Type != parser.Text {
						continue
					}
					now := time.Now().UnixNano()
					first = false
					stamp, ok := strings.CutPrefix(ev.Content, "stamp:")
					ns, err := strconv.ParseInt(stamp, 10, 64)
					if !ok || err != nil {
						b.Fatalf("first text %q is not a stamp", ev.Content)
					}
					latencies = append(latencies, time.Duration(now-ns))
				}
				if first {
					b.Fatal("no text event")
				}
			}
			slices.Sort(latencies)
			at := func(q float64) float64 {
				return float64(latencies[int(q*float64(len(latencies)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(at(0.5), "median-ms")
			b.ReportMetric(at(0.99), "p99-ms")
		})
	}
}
