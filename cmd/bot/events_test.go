package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

func events(t *testing.T, ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := runEvents(ctx, args, stdin, &stdout, &stderr)
	return stdout.String(), err
}

// TestEventsFixtures prints the parsers' hand-built fixtures from a FILE
// argument and compares with their goldens.
func TestEventsFixtures(t *testing.T) {
	for dir, engine := range map[string]string{"claude": "claude-code", "cursor": "cursor"} {
		inputs, _ := filepath.Glob(filepath.Join("..", "..", "parser", "testdata", dir, "*.golden.ndjson"))
		if len(inputs) == 0 {
			t.Fatalf("no goldens in parser/testdata/%s", dir)
		}
		for _, golden := range inputs {
			if strings.HasPrefix(filepath.Base(golden), "recorded-") {
				continue // compared as JSON by the parser's own test
			}
			in := strings.TrimSuffix(golden, ".golden.ndjson") + ".ndjson"
			t.Run(dir+"/"+filepath.Base(in), func(t *testing.T) {
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatal(err)
				}
				got, err := events(t, t.Context(), strings.NewReader("not this"), "--engine", engine, in)
				if err != nil {
					t.Fatal(err)
				}
				if got != string(want) {
					t.Errorf("got:\n%s\nwant:\n%s", got, want)
				}
			})
		}
	}
}

// TestEventsShapes checks the exact JSON line of every event kind.
func TestEventsShapes(t *testing.T) {
	stdin := strings.Join([]string{
		`{"type":"system","subtype":"init","session_id":"s"}`,
		`{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"Hi <there> & \"you\"\n"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"a\tb","is_error":true}]}}`,
		`{"type":"result","subtype":"success","is_error":false,"duration_ms":745,"total_cost_usd":0.004875,"num_turns":5,"session_id":"s2"}`,
	}, "\n")
	got, err := events(t, t.Context(), strings.NewReader(stdin), "--engine", "claude-code")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"text","content":"Hi <there> & \"you\"\n"}
{"type":"tool_call","id":"t1","name":"Bash","args":{"command":"ls"}}
{"type":"tool_result","id":"t1","content":"a\tb","is_error":true}
{"type":"done","session_id":"s2","duration_ms":745,"cost_usd":0.004875,"num_turns":5}
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestEventsAlwaysEndsWithOneTerminalEvent(t *testing.T) {
	cases := []struct {
		name, engine, stdin string
		last                string
	}{
		{"empty input", "cursor", "", `{"type":"error","message":"the agent ended without a result: the output ended before a result line","reason":"crashed"}`},
		{"garbage", "claude-code", "\x00\xff garbage\n{not json\n", `{"type":"error","message":"the agent ended without a result: the output ended before a result line","reason":"crashed"}`},
		{"two results", "cursor", `{"type":"result","is_error":true,"result":"first"}` + "\n" + `{"type":"result","session_id":"x"}`, `{"type":"error","message":"first"}`},
		{"default engine is claude-code", "", `{"type":"result","session_id":"x"}`, `{"type":"done","session_id":"x"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"-"}
			if c.engine != "" {
				args = []string{"--engine", c.engine, "-"}
			}
			got, err := events(t, t.Context(), strings.NewReader(c.stdin), args...)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			if lines[len(lines)-1] != c.last {
				t.Errorf("last line %s, want %s", lines[len(lines)-1], c.last)
			}
			terminal := 0
			for _, l := range lines {
				var e struct{ Type string }
				if err := json.Unmarshal([]byte(l), &e); err != nil {
					t.Fatalf("line %q is not JSON: %v", l, err)
				}
				if e.Type == "done" || e.Type == "error" {
					terminal++
				}
			}
			if terminal != 1 {
				t.Errorf("%d terminal events in\n%s", terminal, got)
			}
		})
	}
}

func TestEventsReadErrorStillEndsTheOutput(t *testing.T) {
	boom := errors.New("disk on fire")
	in := io.MultiReader(strings.NewReader(`{"type":"assistant","message":{"content":[{"type":"text","text":"x"}]}}`+"\n"), iotest.ErrReader(boom))
	got, err := events(t, t.Context(), in, "--engine", "cursor")
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want it to wrap %v", err, boom)
	}
	want := `{"type":"text","content":"x"}
{"type":"error","message":"the agent ended without a result: parser: read lines: disk on fire","reason":"crashed"}
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestEventsCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	got, err := events(t, ctx, strings.NewReader(`{"type":"result","session_id":"x"}`+"\n"), "--engine", "cursor")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if !strings.HasPrefix(got, `{"type":"error"`) || strings.Count(got, "\n") != 1 {
		t.Errorf("output %q, want one terminal error line", got)
	}
}

func TestEventsUsageErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown engine", []string{"--engine", "no-such-cli"}, `unknown engine "no-such-cli"`},
		{"two files", []string{"a", "b"}, "at most one FILE"},
		{"missing file", []string{filepath.Join(t.TempDir(), "nope.ndjson")}, "open input"},
		{"unknown flag", []string{"--bogus"}, "flag provided but not defined"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := events(t, t.Context(), strings.NewReader(""), c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if got != "" {
				t.Errorf("printed %q on a usage error", got)
			}
		})
	}
	if _, err := events(t, t.Context(), strings.NewReader(""), "-h"); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: error %v, want flag.ErrHelp", err)
	}
}
