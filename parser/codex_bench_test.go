package parser

import (
	"bytes"
	"os"
	"testing"
)

// BenchmarkCodexToolHeavy reads and parses the real Codex output of a
// tool-heavy turn (testdata/codex/recorded-tools.ndjson: commands, one with
// a 100 KiB output, a failed one, an apply_patch) per op, ReadLines
// included, as the engine does. Target: at least 100 MB/s on one core
// (cpu-MB/s). Rerun with:
//
//	go test -run '^$' -bench CodexToolHeavy -benchmem ./parser
func BenchmarkCodexToolHeavy(b *testing.B) {
	corpus, err := os.ReadFile("testdata/codex/recorded-tools.ndjson")
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Count(corpus, []byte("\n"))
	pass := func() {
		g := NewGuard(NewCodex())
		n := 0
		if err := ReadLines(bytes.NewReader(corpus), func(line []byte) { n += len(g.Parse(line)) }); err != nil || n != 9 {
			b.Fatalf("%d events, %v", n, err)
		}
	}
	perRun := testing.AllocsPerRun(3, pass)
	b.SetBytes(int64(len(corpus)))
	b.ReportAllocs()
	b.ResetTimer()
	measureCPU(b, len(corpus), pass)
	b.ReportMetric(perRun/float64(lines), "allocs/line")
}
