package parser

import (
	"bytes"
	"os"
	"testing"
)

// The recorded-corpus benchmarks read and parse the real output of a
// tool-heavy turn of a CLI (testdata/<cli>/recorded-tools.ndjson: a
// command with a 100 KiB output (OpenCode cuts it to 50 KiB), a failed
// tool, a file write) per op,
// ReadLines included, as the engine does. Target: at least 100 MB/s on one
// core (cpu-MB/s). Rerun with:
//
//	go test -run '^$' -bench 'ToolHeavy' -benchmem ./parser

func BenchmarkCodexToolHeavy(b *testing.B) {
	benchRecorded(b, "testdata/codex/recorded-tools.ndjson", NewCodex, 9)
}

func BenchmarkGeminiToolHeavy(b *testing.B) {
	benchRecorded(b, "testdata/gemini/recorded-tools.ndjson", NewGemini, 12)
}

func BenchmarkOpenCodeToolHeavy(b *testing.B) {
	benchRecorded(b, "testdata/opencode/recorded-tools.ndjson", NewOpenCode, 9)
}

func benchRecorded(b *testing.B, file string, newParser func() Parser, events int) {
	corpus, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Count(corpus, []byte("\n"))
	pass := func() {
		g := NewGuard(newParser())
		n := 0
		err := ReadLines(bytes.NewReader(corpus), func(line []byte) { n += len(g.Parse(line)) })
		if _, ok := g.End(true, ""); ok {
			n++
		}
		if err != nil || n != events {
			b.Fatalf("%d events, want %d (%v)", n, events, err)
		}
	}
	perRun := testing.AllocsPerRun(3, pass)
	b.SetBytes(int64(len(corpus)))
	b.ReportAllocs()
	b.ResetTimer()
	measureCPU(b, len(corpus), pass)
	b.ReportMetric(perRun/float64(lines), "allocs/line")
}
