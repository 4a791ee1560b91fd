package parser

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// addFixtures seeds f with every fixture of dir, whole and line by line.
func addFixtures(f *testing.F, dir string) {
	files, _ := filepath.Glob(filepath.Join("testdata", dir, "*.ndjson"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		for _, l := range bytes.Split(data, []byte("\n")) {
			f.Add(l)
		}
	}
}

// checkRun parses data as a whole CLI output through a Guard and checks
// that every event prints as one valid JSON line and that exactly one
// terminal event ends the run.
func checkRun(t *testing.T, p Parser, data []byte) {
	g := NewGuard(p)
	var events []Event
	if err := ReadLines(bytes.NewReader(data), func(line []byte) {
		events = append(events, g.Parse(line)...)
	}); err != nil {
		t.Fatal(err)
	}
	if e, ok := g.Finish("end of input"); ok {
		events = append(events, e)
	}
	for i, e := range events {
		if e.Terminal() != (i == len(events)-1) {
			t.Fatalf("event %d of %d (%s) breaks the one-terminal-event rule", i, len(events), e.Type)
		}
		b, err := e.MarshalJSON()
		if err != nil || !json.Valid(b) || bytes.IndexByte(b, '\n') >= 0 {
			t.Fatalf("event %+v marshals to %q (%v)", e, b, err)
		}
	}
}

func FuzzClaudeCode(f *testing.F) {
	addFixtures(f, "claude")
	f.Fuzz(func(t *testing.T, data []byte) { checkRun(t, NewClaudeCode(), data) })
}

func FuzzCursor(f *testing.F) {
	addFixtures(f, "cursor")
	f.Fuzz(func(t *testing.T, data []byte) { checkRun(t, NewCursor(), data) })
}

func FuzzCodex(f *testing.F) {
	addFixtures(f, "codex")
	f.Fuzz(func(t *testing.T, data []byte) { checkRun(t, NewCodex(), data) })
}

func FuzzGemini(f *testing.F) {
	addFixtures(f, "gemini")
	f.Fuzz(func(t *testing.T, data []byte) { checkRun(t, NewGemini(), data) })
}

func FuzzOpenCode(f *testing.F) {
	addFixtures(f, "opencode")
	f.Fuzz(func(t *testing.T, data []byte) { checkRun(t, NewOpenCode(), data) })
}
