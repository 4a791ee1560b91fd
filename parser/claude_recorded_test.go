package parser_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/golem-chat/golem/parser"
)

// The golden files of the recorded fixtures are regenerated with
//
//	go test ./parser -run TestClaudeRecorded -update
//
// The flag is registered only if another test file of this binary has not
// registered it already.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files from the parsers' output")
	}
}

func updateGoldens() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// recordedExpectations states, for each fixture recorded from the real CLI
// (see engine/anthropictest's TestRecord), what a user must see whatever
// the golden file says: the answer text, the tools called in order, and how
// the run ends. It guards the goldens against a careless -update.
var recordedExpectations = map[string]struct {
	text      string   // all text events joined
	tools     []string // tool_call names in order
	errorHas  string   // "" for a run that ends with done
	toolError []string // ids of tool results that are errors
}{
	"agent":              {text: "The agent answered.", tools: []string{"Agent"}},
	"bash":               {text: "The command printed: hi", tools: []string{"Bash"}},
	"bash-partial":       {text: "The command printed: hi", tools: []string{"Bash"}},
	"overloaded":         {errorHas: "529 Overloaded"},
	"overloaded-partial": {errorHas: "529 Overloaded"},
	"resume-partial":     {text: "Hello from the fake model. This answer streams in several pieces."},
	"resume-unknown":     {errorHas: "No conversation found with session ID: 2a5f0c1e-7d4b-4c3a-9e8f-1b2c3d4e5f60"},
	"text":               {text: "Hello from the fake model. This answer streams in several pieces."},
	"text-partial":       {text: "Hello from the fake model. This answer streams in several pieces."},
	"thinking":           {text: "Hi! I thought about it first."},
	"thinking-partial":   {text: "Hi! I thought about it first."},
	"tools": {
		text:      "Let me run a command and write a note.Done: 2 tool results in the last step, 1 of them errors.",
		tools:     []string{"Bash", "Write", "Read", "Read"},
		toolError: []string{"toolu_tools_missing"},
	},
	"tools-partial": {
		text:      "Let me run a command and write a note.Done: 2 tool results in the last step, 1 of them errors.",
		tools:     []string{"Bash", "Write", "Read", "Read"},
		toolError: []string{"toolu_tools_missing"},
	},
}

// parseRecorded runs a fresh Claude Code parser, through the Guard as the
// engine does, over a recorded stdout.
func parseRecorded(t *testing.T, raw []byte) []parser.Event {
	t.Helper()
	g := parser.NewGuard(parser.NewClaudeCode())
	var events []parser.Event
	err := parser.ReadLines(bytes.NewReader(raw), func(line []byte) {
		events = append(events, g.Parse(line)...)
	})
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := g.Finish("end of the recorded output"); ok {
		events = append(events, e)
	}
	return events
}

func TestClaudeRecorded(t *testing.T) {
	files, err := filepath.Glob("testdata/claude/recorded-*.ndjson")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded fixtures: %v", err)
	}
	seen := map[string]bool{}
	for _, file := range files {
		if strings.HasSuffix(file, ".golden.ndjson") {
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), "recorded-"), ".ndjson")
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			events := parseRecorded(t, raw)
			checkRecordedInvariants(t, raw, events)
			want, ok := recordedExpectations[name]
			if !ok {
				t.Fatalf("no expectations for %s: add them to recordedExpectations", file)
			}
			checkWhatUserSees(t, events, want.text, want.tools, want.errorHas, want.toolError)
			compareGolden(t, strings.TrimSuffix(file, ".ndjson")+".golden.ndjson", events)
		})
	}
	for name := range recordedExpectations {
		if !seen[name] {
			t.Errorf("fixture recorded-%s.ndjson is missing", name)
		}
	}
}

// checkRecordedInvariants checks the rules every Claude Code run obeys: one
// terminal event, last; tool calls and results paired by id; thinking never
// shown as text; done carries the session id of the run's own lines and
// the result's figures.
func checkRecordedInvariants(t *testing.T, raw []byte, events []parser.Event) {
	t.Helper()
	for i, e := range events {
		if e.Terminal() != (i == len(events)-1) {
			t.Fatalf("event %d of %d (%s) terminal=%v: exactly the last event must be terminal", i, len(events), e.Type, e.Terminal())
		}
	}
	calls := map[string]bool{}
	results := map[string]bool{}
	for _, e := range events {
		switch e.Type {
		case parser.ToolCall:
			if e.ID == "" || e.Name == "" || !json.Valid(e.Args) {
				t.Errorf("tool_call without id, name or JSON args: %+v", e)
			}
			if calls[e.ID] {
				t.Errorf("tool %s called twice", e.ID)
			}
			calls[e.ID] = true
		case parser.ToolResult:
			if !calls[e.ID] {
				t.Errorf("tool_result %s before (or without) its tool_call", e.ID)
			}
			if results[e.ID] {
				t.Errorf("tool %s has two results", e.ID)
			}
			results[e.ID] = true
		case parser.Text:
			if strings.Contains(e.Content, "The user wants a greeting") {
				t.Errorf("thinking shown as answer text: %q", e.Content)
			}
		}
	}
	for id := range calls {
		if !results[id] && events[len(events)-1].Type == parser.Done {
			t.Errorf("tool %s has no result in a run that succeeded", id)
		}
	}
	last := events[len(events)-1]
	if last.Type != parser.Done {
		return
	}
	var res struct {
		SessionID    string  `json:"session_id"`
		DurationMS   int64   `json:"duration_ms"`
		TotalCostUSD float64 `json:"total_cost_usd"`
		NumTurns     int     `json:"num_turns"`
	}
	lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
	if err := json.Unmarshal(lines[len(lines)-1], &res); err != nil {
		t.Fatal(err)
	}
	switch {
	case last.SessionID != res.SessionID || last.SessionID == "":
		t.Errorf("done session %q, the result line says %q", last.SessionID, res.SessionID)
	case last.Stats == nil:
		t.Errorf("done %+v has no run statistics, want the result line's", last)
	case last.Stats.DurationMS == nil || *last.Stats.DurationMS != res.DurationMS:
		t.Errorf("done duration %v, want %d", last.Stats.DurationMS, res.DurationMS)
	case last.Stats.CostUSD == nil || *last.Stats.CostUSD != res.TotalCostUSD || *last.Stats.CostUSD <= 0:
		t.Errorf("done cost %v, want %v", last.Stats.CostUSD, res.TotalCostUSD)
	case last.Stats.NumTurns == nil || *last.Stats.NumTurns != res.NumTurns:
		t.Errorf("done num_turns %v, want %d", last.Stats.NumTurns, res.NumTurns)
	}
}

// checkWhatUserSees compares the answer text, the tools and the ending
// with what the fake model was scripted to do.
func checkWhatUserSees(t *testing.T, events []parser.Event, text string, tools []string, errorHas string, toolErrors []string) {
	t.Helper()
	var gotText strings.Builder
	var gotTools, gotToolErrors []string
	for _, e := range events {
		switch e.Type {
		case parser.Text:
			gotText.WriteString(e.Content)
		case parser.ToolCall:
			gotTools = append(gotTools, e.Name)
		case parser.ToolResult:
			if e.IsError {
				gotToolErrors = append(gotToolErrors, e.ID)
			}
		}
	}
	if gotText.String() != text {
		t.Errorf("answer text %q, want %q", gotText.String(), text)
	}
	if !reflect.DeepEqual(gotTools, tools) {
		t.Errorf("tools called %v, want %v", gotTools, tools)
	}
	if !reflect.DeepEqual(gotToolErrors, toolErrors) {
		t.Errorf("failed tool results %v, want %v", gotToolErrors, toolErrors)
	}
	last := events[len(events)-1]
	if errorHas == "" && last.Type != parser.Done {
		t.Errorf("run ends with %s %q, want done", last.Type, last.Message)
	}
	if errorHas != "" && (last.Type != parser.Error || !strings.Contains(last.Message, errorHas)) {
		t.Errorf("run ends with %s %q, want an error containing %q", last.Type, last.Message, errorHas)
	}
}

// compareGolden compares events with the golden JSON lines at path, as JSON
// values (so escaping and float spelling do not matter), or rewrites the
// file with -update.
func compareGolden(t *testing.T, path string, events []parser.Event) {
	t.Helper()
	var got bytes.Buffer
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		got.Write(b)
		got.WriteByte('\n')
	}
	if updateGoldens() {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (create it with -update, then read it): %v", err)
	}
	gotLines, wantLines := jsonLines(t, got.Bytes()), jsonLines(t, want)
	for i := 0; i < max(len(gotLines), len(wantLines)); i++ {
		var g, w any
		if i < len(gotLines) {
			g = gotLines[i]
		}
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s line %d:\n got %s\nwant %s", path, i+1, compact(g), compact(w))
		}
	}
}

func jsonLines(t *testing.T, data []byte) []any {
	t.Helper()
	var out []any
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("golden line %q: %v", line, err)
		}
		out = append(out, v)
	}
	return out
}

func compact(v any) string {
	if v == nil {
		return "(none)"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// BenchmarkClaudeRecorded parses every line recorded from the real CLI (a
// mix of init, partial-message, tool and result lines), each fixture
// through a fresh Guard as the engine does; lines are split beforehand, so
// this measures the parser alone. Rerun with:
//
//	go test -run '^$' -bench ClaudeRecorded -benchmem ./parser
func BenchmarkClaudeRecorded(b *testing.B) {
	files, err := filepath.Glob("testdata/claude/recorded-*.ndjson")
	if err != nil {
		b.Fatal(err)
	}
	var runs [][][]byte
	size, lines := 0, 0
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.ndjson") {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		run := bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
		runs = append(runs, run)
		size += len(raw)
		lines += len(run)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, run := range runs {
			g := parser.NewGuard(parser.NewClaudeCode())
			for _, line := range run {
				g.Parse(line)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*lines), "ns/line")
}
