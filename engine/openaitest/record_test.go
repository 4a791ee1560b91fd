package openaitest

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

var record = flag.Bool("record", false, "run the real Codex CLI against the fake and rewrite parser/testdata/codex/recorded-*.ndjson")

// recordDir is where the recorded fixtures go, from this package's folder.
const recordDir = "../../parser/testdata/codex"

// Placeholders for the run's temporary paths and the fake's port.
const (
	recordedWorkdir = "/tmp/golem-work"
	recordedHome    = "/tmp/golem-home"
	recordedHost    = "127.0.0.1:8080"
)

// recording is one fixture: the CLI run against a scenario with the
// engine's flags, directly (not through the engine).
type recording struct {
	name, scenario, prompt string
	model                  string
	// resume: "" for a new thread, "previous" to run the scenario once
	// first and record the resumed run, or a literal thread id or name.
	resume   string
	provider string // extra provider settings, e.g. "stream_max_retries=2"
	wantExit int
}

var recordings = []recording{
	{name: "text", scenario: ScenarioText, prompt: "Say hello."},
	{name: "model", scenario: ScenarioText, prompt: "Say hello.", model: "gpt-fake-1"},
	{name: "bash", scenario: ScenarioBash, prompt: "Run echo hi."},
	{name: "write", scenario: ScenarioWrite, prompt: "Write a note."},
	{name: "tools", scenario: ScenarioTools, prompt: "Look around, then write a note."},
	{name: "error", scenario: ScenarioError, prompt: "Say hello.", wantExit: 1},
	{name: "failed", scenario: ScenarioFailed, prompt: "Say hello.", provider: "request_max_retries=0,stream_max_retries=1", wantExit: 1},
	{name: "overloaded", scenario: ScenarioOverloaded, prompt: "Say hello.", provider: "request_max_retries=0,stream_max_retries=2", wantExit: 1},
	{name: "resume", scenario: ScenarioText, prompt: "Say hello again.", resume: "previous"},
	{name: "resume-name", scenario: ScenarioText, prompt: "Say hello.", resume: "my-old-thread"},
}

// TestRecord rewrites the parser's recorded Codex fixtures from the real CLI:
//
//	go test ./engine/openaitest -run TestRecord -record
//
// then regenerate the goldens (go test ./parser -run TestGolden -update)
// and read their diff.
func TestRecord(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the fixtures from the real CLI")
	}
	bin := CodexBin(t)
	srv := NewServer(t)
	for _, rec := range recordings {
		t.Run(rec.name, func(t *testing.T) {
			t.Parallel()
			home, workdir := t.TempDir(), t.TempDir()
			resume := rec.resume
			if resume == "previous" {
				out, _, code := runCodex(t, bin, srv, home, workdir, rec, "")
				if code != 0 {
					t.Fatalf("first run exited %d:\n%s", code, out)
				}
				resume = threadOf(t, out)
			}
			out, stderr, code := runCodex(t, bin, srv, home, workdir, rec, resume)
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

// runCodex runs the CLI once with the engine's flags.
func runCodex(t *testing.T, bin string, srv *Server, home, workdir string, rec recording, resume string) (stdout, stderr []byte, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	provider := `{name="golem",base_url="` + srv.BaseURL(rec.scenario) + `",wire_api="responses",env_key="OPENAI_API_KEY"`
	if rec.provider != "" {
		provider += "," + rec.provider
	}
	args := []string{"exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
		"-c", "model_provider=golem", "-c", "model_providers.golem=" + provider + "}"}
	if rec.model != "" {
		args = append(args, "-m", rec.model)
	}
	if resume != "" {
		args = append(args, "resume", resume)
	}
	cmd := exec.CommandContext(ctx, bin, append(args, rec.prompt)...)
	cmd.Dir = workdir
	cmd.Env = append(os.Environ(), "HOME="+home, "CODEX_HOME="+home, "OPENAI_API_KEY=test")
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

// threadOf is the thread id of a run's thread.started line.
func threadOf(t *testing.T, stdout []byte) string {
	t.Helper()
	first, _, _ := bytes.Cut(stdout, []byte("\n"))
	var l struct {
		ThreadID string `json:"thread_id"`
	}
	if err := json.Unmarshal(first, &l); err != nil || l.ThreadID == "" {
		t.Fatalf("no thread id in the first line %q: %v", first, err)
	}
	return l.ThreadID
}
