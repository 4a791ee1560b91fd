package anthropictest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// openCodeRecordDir is where the recorded OpenCode fixtures go.
const openCodeRecordDir = "../../parser/testdata/opencode"

var openCodeRecordings = []struct {
	name, scenario, prompt string
	resume                 bool // run the scenario once first, record the resumed run
	wantExit               int
}{
	{name: "text", scenario: ScenarioText, prompt: "Say hello."},
	{name: "bash", scenario: ScenarioOpenCodeBash, prompt: "Run echo hi."},
	{name: "write", scenario: ScenarioOpenCodeWrite, prompt: "Write a note."},
	{name: "tools", scenario: ScenarioOpenCodeTools, prompt: "Look around, then write a note."},
	{name: "error", scenario: ScenarioOpenCodeError, prompt: "Say hello.", wantExit: 1},
	{name: "resume", scenario: ScenarioText, prompt: "Say hello again.", resume: true},
}

// TestRecordOpenCode rewrites the parser's recorded OpenCode fixtures from
// the real CLI:
//
//	go test ./engine/anthropictest -run TestRecordOpenCode -record
//
// then regenerate the goldens (go test ./parser -run TestOpenCodeRecorded
// -update) and read their diff.
func TestRecordOpenCode(t *testing.T) {
	if !*record {
		t.Skip("run with -record to re-record the fixtures from the real CLI")
	}
	bin := OpenCodeBin(t)
	srv := NewServer(t)
	if err := os.MkdirAll(openCodeRecordDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, rec := range openCodeRecordings {
		t.Run(rec.name, func(t *testing.T) {
			t.Parallel()
			home, workdir := t.TempDir(), t.TempDir()
			env := os.Environ()
			vars := OpenCodeVars(home, srv.BaseURL(rec.scenario))
			names := make([]string, 0, len(vars))
			for k := range vars {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				env = append(env, k+"="+vars[k])
			}
			session := ""
			if rec.resume {
				out, _, code := runOpenCode(t, bin, workdir, env, rec.prompt, "")
				if code != 0 {
					t.Fatalf("first run exited %d:\n%s", code, out)
				}
				var l struct {
					SessionID string `json:"sessionID"`
				}
				first, _, _ := bytes.Cut(out, []byte("\n"))
				if err := json.Unmarshal(first, &l); err != nil || l.SessionID == "" {
					t.Fatalf("no session id in %q: %v", first, err)
				}
				session = l.SessionID
			}
			out, stderr, code := runOpenCode(t, bin, workdir, env, rec.prompt, session)
			if code != rec.wantExit {
				t.Fatalf("exit code %d, want %d; stderr:\n%s\nstdout:\n%s", code, rec.wantExit, stderr, out)
			}
			path := filepath.Join(openCodeRecordDir, "recorded-"+rec.name+".ndjson")
			if err := os.WriteFile(path, sanitize(out, srv.URL, home, workdir), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// runOpenCode runs the CLI once with the engine's flags, the prompt on stdin.
func runOpenCode(t *testing.T, bin, workdir string, env []string, prompt, session string) (stdout, stderr []byte, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	args := []string{"run", "--format", "json", "--auto", "--dir", workdir}
	if session != "" {
		args = append(args, "--session", session)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env, cmd.Stdin = workdir, env, strings.NewReader(prompt)
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
