package geminitest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var record = flag.Bool("record", false, "run the real Gemini CLI against the fake and rewrite parser/testdata/gemini/recorded-*.ndjson")

// recordDir is where the recorded fixtures go, from this package's folder.
const recordDir = "../../parser/testdata/gemini"

// Placeholders for the run's temporary paths and the fake's port.
const (
	recordedWorkdir = "/tmp/golem-work"
	recordedHome    = "/tmp/golem-home"
	recordedHost    = "127.0.0.1:8080"
)

// recording is one fixture: the CLI run against a scenario with the
// engine's flags, directly (not through the engine).
type recording struct {
	name, scenario, prompt, model string
	// resume: "" for a new session, "previous" to run the scenario once
	// first and record the resumed run.
	resume   string
	wantExit int
}

var recordings = []recording{
	{name: "text", scenario: ScenarioText, prompt: "Say hello."},
	{name: "model", scenario: ScenarioText, prompt: "Say hello.", model: "gemini-fake-1"},
	{name: "bash", scenario: ScenarioBash, prompt: "Run echo hi."},
	{name: "write", scenario: ScenarioWrite, prompt: "Write a note."},
	{name: "tools", scenario: ScenarioTools, prompt: "Look around, then write a note."},
	{name: "error", scenario: ScenarioError, prompt: "Say hello.", wantExit: 144},
	{name: "resume", scenario: ScenarioText, prompt: "Say hello again.", resume: "previous"},
}

// TestRecord rewrites the parser's recorded Gemini fixtures from the real
// CLI:
//
//	go test ./engine/geminitest -run TestRecord -record
//
// then regenerate the goldens (go test ./parser -run TestGeminiRecorded
// -update) and read their diff.
func TestRecord(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the fixtures from the real CLI")
	}
	bin := GeminiBin(t)
	srv := NewServer(t)
	if err := os.MkdirAll(recordDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, rec := range recordings {
		t.Run(rec.name, func(t *testing.T) {
			t.Parallel()
			home, workdir := t.TempDir(), t.TempDir()
			env := os.Environ()
			for k, v := range CLIVars(t, home, srv.BaseURL(rec.scenario)) {
				env = append(env, k+"="+v)
			}
			resume := ""
			if rec.resume == "previous" {
				out, _, code := runGemini(t, bin, workdir, env, rec, "")
				if code != 0 {
					t.Fatalf("first run exited %d:\n%s", code, out)
				}
				resume = sessionOf(t, out)
			}
			out, stderr, code := runGemini(t, bin, workdir, env, rec, resume)
			if code != rec.wantExit {
				t.Fatalf("exit code %d, want %d; stderr:\n%s\nstdout:\n%s", code, rec.wantExit, stderr, out)
			}
			r := strings.NewReplacer(workdir, recordedWorkdir, home, recordedHome, strings.TrimPrefix(srv.URL, "http://"), recordedHost)
			path := filepath.Join(recordDir, "recorded-"+rec.name+".ndjson")
			if err := os.WriteFile(path, []byte(r.Replace(string(out))), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// runGemini runs the CLI once with the engine's flags.
func runGemini(t *testing.T, bin, workdir string, env []string, rec recording, resume string) (stdout, stderr []byte, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := []string{"-p", rec.prompt, "--output-format", "stream-json", "--yolo", "--skip-trust"}
	if resume != "" {
		args = append(args, "--resume", resume)
	}
	if rec.model != "" {
		args = append(args, "-m", rec.model)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = workdir, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.Bytes(), errb.Bytes(), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("run %s: %v", bin, err)
	}
	return out.Bytes(), errb.Bytes(), 0
}

// sessionOf is the session id of a run's init line.
func sessionOf(t *testing.T, stdout []byte) string {
	t.Helper()
	first, _, _ := bytes.Cut(stdout, []byte("\n"))
	var l struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(first, &l); err != nil || l.SessionID == "" {
		t.Fatalf("no session id in the first line %q: %v", first, err)
	}
	return l.SessionID
}
