package parser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Rerun with: go test -run '^$' -bench . -benchmem ./parser

// toolHeavyClaudeCorpus builds a Claude Code output as the real CLI prints
// it for a tool-heavy turn: per tool, an assistant tool_use line and a user
// tool_result line whose output appears twice (in the tool_result and in
// tool_use_result), with outputs from 2 KiB to 256 KiB of source-like text
// (tabs, quotes, backslashes, some non-ASCII).
func toolHeavyClaudeCorpus() (corpus []byte, lines int) {
	const sid = "0b9a2f6e-1c1e-4a47-9a8e-5f3f4c2d9e10"
	var src strings.Builder
	for i := 0; src.Len() < 256<<10; i++ {
		fmt.Fprintf(&src, "%6d\tfunc handle%d(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, \"héllo %%q\\n\", r.URL.Path) } // ✓\n", i, i)
	}
	text := src.String()
	var b bytes.Buffer
	put := func(v any) {
		line, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		b.Write(line)
		b.WriteByte('\n')
		lines++
	}
	type m = map[string]any
	put(m{"type": "system", "subtype": "init", "session_id": sid, "cwd": "/w", "tools": []string{"Bash", "Read", "Edit"}, "model": "claude-sonnet-4-5"})
	for i, size := range []int{2 << 10, 8 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 4 << 10, 16 << 10, 96 << 10, 1 << 10} {
		id := fmt.Sprintf("toolu_01%022d", i)
		out := text[:size]
		put(m{"type": "assistant", "message": m{"model": "claude-sonnet-4-5", "id": fmt.Sprintf("msg_%d", i), "type": "message", "role": "assistant",
			"content":     []m{{"type": "tool_use", "id": id, "name": "Bash", "input": m{"command": "cat server.go", "description": "Show the server"}}},
			"stop_reason": nil, "usage": m{"input_tokens": 1200, "output_tokens": 80, "cache_read_input_tokens": 20000}},
			"parent_tool_use_id": nil, "session_id": sid, "uuid": "3c1f0e7a-6d1b-4a8e-9f00-0000000000" + fmt.Sprint(i)})
		put(m{"type": "user", "message": m{"role": "user", "content": []m{{"tool_use_id": id, "type": "tool_result", "content": out, "is_error": false}}},
			"parent_tool_use_id": nil, "session_id": sid, "uuid": "4d2e1f8b-7e2c-4b9f-a011-0000000000" + fmt.Sprint(i),
			"tool_use_result": m{"stdout": out, "stderr": "", "interrupted": false, "isImage": false}})
		put(m{"type": "assistant", "message": m{"id": fmt.Sprintf("msg_%d", i), "role": "assistant", "content": []m{{"type": "text", "text": "The file defines the handlers; next I will check the tests."}}},
			"parent_tool_use_id": nil, "session_id": sid})
	}
	put(m{"type": "result", "subtype": "success", "is_error": false, "duration_ms": 64000, "num_turns": 11, "result": "Done.", "session_id": sid, "total_cost_usd": 0.4123})
	return b.Bytes(), lines
}

// BenchmarkClaudeCodeToolHeavy reads and parses the whole corpus per op,
// ReadLines included, as the engine does. Target: at least 100 MB/s on
// one core (cpu-MB/s; MB/s is wall time and drops on a busy machine).
func BenchmarkClaudeCodeToolHeavy(b *testing.B) {
	corpus, lines := toolHeavyClaudeCorpus()
	pass := func() {
		g := NewGuard(NewClaudeCode())
		n := 0
		if err := ReadLines(bytes.NewReader(corpus), func(line []byte) { n += len(g.Parse(line)) }); err != nil || n != 31 {
			b.Fatalf("%d events, %v", n, err)
		}
	}
	perRun := testing.AllocsPerRun(3, pass)
	b.SetBytes(int64(len(corpus)))
	b.ReportAllocs()
	b.ResetTimer()
	measureCPU(b, len(corpus), pass)
	b.ReportMetric(perRun/float64(lines), "allocs/line")
	b.ReportMetric(float64(len(corpus))/float64(lines), "bytes/line")
}

// BenchmarkCursorTextDelta parses one --stream-partial-output text delta
// line per op. Target: at least 500,000 lines/s on one core (cpu-ops/s;
// ns/op is wall time and grows on a busy machine).
func BenchmarkCursorTextDelta(b *testing.B) {
	words := strings.Fields("I'll look at the parser first and then run the tests to see which of them fail on this machine é ✓")
	lines := make([][]byte, len(words))
	for i, w := range words {
		lines[i] = fmt.Appendf(nil, `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":%q}]},"session_id":"c6b62c6f-7ead-4fd6-9922-e952131177ff","timestamp_ms":%d}`, " "+w, 1764400000001+i)
	}
	p := NewCursor()
	b.SetBytes(int64(len(lines[0])))
	b.ReportAllocs()
	i := 0
	measureCPU(b, 0, func() {
		if i%4096 == 0 {
			p = NewCursor() // a new run now and then, so the segment stays realistic
		}
		if len(p.Parse(lines[i%len(lines)])) != 1 {
			b.Fatal("no text event")
		}
		i++
	})
}

// BenchmarkClaudeCodeTextDelta parses one --include-partial-messages text
// delta line per op, for comparison with Cursor's.
func BenchmarkClaudeCodeTextDelta(b *testing.B) {
	line := []byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" parser"}},"session_id":"0b9a2f6e-1c1e-4a47-9a8e-5f3f4c2d9e10","parent_tool_use_id":null,"uuid":"5e3f2a9c-8f3d-4ca0-b122-000000000001"}`)
	start := []byte(`{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1"}}}`)
	p := NewClaudeCode()
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	i := 0
	measureCPU(b, 0, func() {
		if i%4096 == 0 {
			p.Parse(start)
		}
		if len(p.Parse(line)) != 1 {
			b.Fatal("no text event")
		}
		i++
	})
}
