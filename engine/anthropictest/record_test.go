package anthropictest

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

var record = flag.Bool("record", false, "run the real Claude Code CLI against the fake and rewrite parser/testdata/claude/recorded-*.ndjson")

// recordDir is where the recorded fixtures go, from this package's folder.
const recordDir = "../../parser/testdata/claude"

// Placeholders that replace the run's temporary paths and the fake's port in
// recorded lines, so re-recording changes only what the CLI itself varies
// (ids, timings).
const (
	recordedWorkdir = "/tmp/golem-work"
	recordedHome    = "/tmp/golem-home"
	recordedHost    = "127.0.0.1:8080"
)

// recording is one fixture: the CLI run against a scenario, directly with the
// spec's flags (not through the engine).
type recording struct {
	name     string // the fixture is recorded-<name>.ndjson
	scenario string
	prompt   string
	partial  bool // --include-partial-messages
	// resume: "" for a new session, "previous" to first run the scenario
	// once and record the resumed second run, or a literal session id.
	resume string
	// wantExit is the CLI's expected exit code.
	wantExit int
}

var recordings = []recording{
	{name: "text", scenario: ScenarioText, prompt: "Say hello."},
	{name: "text-partial", scenario: ScenarioText, prompt: "Say hello.", partial: true},
	{name: "thinking", scenario: ScenarioThinking, prompt: "Think, then greet me."},
	{name: "thinking-partial", scenario: ScenarioThinking, prompt: "Think, then greet me.", partial: true},
	{name: "bash", scenario: ScenarioBash, prompt: "Run echo hi."},
	{name: "bash-partial", scenario: ScenarioBash, prompt: "Run echo hi.", partial: true},
	{name: "tools", scenario: ScenarioTools, prompt: "Run a command, write a note, read it back."},
	{name: "tools-partial", scenario: ScenarioTools, prompt: "Run a command, write a note, read it back.", partial: true},
	{name: "agent", scenario: ScenarioAgent, prompt: "Ask a subagent to say hi."},
	{name: "overloaded", scenario: ScenarioOverloaded, prompt: "Say hello.", wantExit: 1},
	{name: "overloaded-partial", scenario: ScenarioOverloaded, prompt: "Say hello.", partial: true, wantExit: 1},
	{name: "resume-partial", scenario: ScenarioText, prompt: "Say hello again.", partial: true, resume: "previous"},
	{name: "resume-unknown", scenario: ScenarioText, prompt: "Say hello.", partial: true,
		resume: "2a5f0c1e-7d4b-4c3a-9e8f-1b2c3d4e5f60", wantExit: 1},
}

// TestRecord rewrites the parser's recorded fixtures from the real CLI:
//
//	go test ./engine/anthropictest -run TestRecord -record
//
// Each fixture is the CLI's raw stdout, with the temporary workdir, HOME
// and the fake's address replaced by fixed placeholders. Afterwards
// regenerate the parser's golden files (go test ./parser -run
// TestClaudeRecorded -update) and read their diff.
func TestRecord(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the fixtures from the real CLI")
	}
	bin := ClaudeBin(t)
	srv := NewServer(t)
	for _, rec := range recordings {
		t.Run(rec.name, func(t *testing.T) {
			t.Parallel()
			home, workdir := t.TempDir(), t.TempDir()
			env := CLIEnv(home, srv.BaseURL(rec.scenario))
			resume := rec.resume
			if resume == "previous" {
				out, _, code := runCLI(t, bin, workdir, env, rec.prompt, rec.partial, "")
				if code != 0 {
					t.Fatalf("first run exited %d:\n%s", code, out)
				}
				resume = sessionOf(t, out)
			}
			out, stderr, code := runCLI(t, bin, workdir, env, rec.prompt, rec.partial, resume)
			if code != rec.wantExit {
				t.Fatalf("exit code %d, want %d; stderr:\n%s\nstdout:\n%s", code, rec.wantExit, stderr, out)
			}
			lines := bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n"))
			if last := lines[len(lines)-1]; !bytes.HasPrefix(last, []byte(`{"type":"result"`)) {
				t.Fatalf("the last stdout line is not a result: %s", last)
			}
			out = sanitize(out, srv.URL, home, workdir)
			path := filepath.Join(recordDir, "recorded-"+rec.name+".ndjson")
			if err := os.WriteFile(path, out, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %s (%d lines)", path, len(lines))
		})
	}
	t.Cleanup(func() {
		if u := srv.Unexpected(); len(u) > 0 {
			t.Errorf("the CLI made requests the fake does not know: %v", u)
		}
	})
}

// runCLI runs the CLI once as the engine does and returns its stdout,
// stderr and exit code.
func runCLI(t *testing.T, bin, workdir string, env []string, prompt string, partial bool, resume string) (stdout, stderr []byte, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := []string{"-p", prompt, "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"}
	if partial {
		args = append(args, "--include-partial-messages")
	}
	if resume != "" {
		args = append(args, "--resume", resume)
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

// sessionOf is the session id of a run's result line.
func sessionOf(t *testing.T, stdout []byte) string {
	t.Helper()
	lines := bytes.Split(bytes.TrimSpace(stdout), []byte("\n"))
	var res struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(lines[len(lines)-1], &res); err != nil || res.SessionID == "" {
		t.Fatalf("no session id in the last line %q: %v", lines[len(lines)-1], err)
	}
	return res.SessionID
}

// sanitize replaces a run's temporary paths (also in the CLI's project slug,
// where '/' becomes '-') and the fake's address by fixed placeholders.
func sanitize(out []byte, serverURL, home, workdir string) []byte {
	slug := func(p string) string { return strings.ReplaceAll(p, "/", "-") }
	r := strings.NewReplacer(
		workdir, recordedWorkdir,
		home, recordedHome,
		slug(workdir), slug(recordedWorkdir),
		strings.TrimPrefix(serverURL, "http://"), recordedHost,
	)
	return []byte(r.Replace(string(out)))
}
