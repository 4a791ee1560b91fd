package enginetest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golem-chat/golem/engine/enginetest"
)

// run runs the fake agent directly and returns its stdout lines as objects,
// its stderr and its exit code.
func run(t *testing.T, bin, logPath string, args ...string) (lines []map[string]any, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(cmd.Environ(), "FAKE_AGENT_LOG="+logPath, "CLAUDECODE=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err == nil {
			lines = append(lines, m)
		}
	}
	return lines, errb.String(), code
}

func TestClaudeFormatAndLog(t *testing.T) {
	bin := enginetest.Build(t)
	logPath := filepath.Join(t.TempDir(), "log")
	lines, _, code := run(t, bin, logPath, "-p", "!tool Bash {\"command\":\"ls\"}\nhi", "--output-format", "stream-json",
		"--verbose", "--dangerously-skip-permissions", "--include-partial-messages", "--model", "m1")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	last := lines[len(lines)-1]
	if last["type"] != "result" || last["result"] != "echo: hi" || last["is_error"] != false {
		t.Fatalf("result line = %v", last)
	}
	var types []string
	for _, l := range lines {
		types = append(types, l["type"].(string))
	}
	got := strings.Join(types, ",")
	if !strings.HasPrefix(got, "system,assistant,user,stream_event") || !strings.Contains(got, "stream_event,assistant,stream_event") {
		t.Errorf("line types = %s", got)
	}
	invs := enginetest.ReadLog(t, logPath)
	if len(invs) != 1 {
		t.Fatalf("log has %d invocations, want 1", len(invs))
	}
	inv := invs[0]
	if m, _ := inv.Flag("--model"); m != "m1" || !inv.Has("--verbose") || inv.Env["CLAUDECODE"] != "1" || inv.SessionID != last["session_id"] {
		t.Errorf("invocation = %+v", inv)
	}
}

func TestResume(t *testing.T) {
	bin := enginetest.Build(t)
	logPath := filepath.Join(t.TempDir(), "log")
	base := []string{"-p", "hi", "--output-format", "stream-json", "--verbose"}
	lines, _, _ := run(t, bin, logPath, append(base, "--resume", "s-1")...)
	if sid := lines[len(lines)-1]["session_id"]; sid != "s-1" {
		t.Errorf("resumed session id = %v, want s-1", sid)
	}
	lines, stderr, code := run(t, bin, logPath, append(base, "--resume", "unknown-7")...)
	want := "No conversation found with session ID: unknown-7"
	if code != 1 || !strings.Contains(stderr, want) || len(lines) != 1 {
		t.Fatalf("exit %d, stderr %q, %d lines", code, stderr, len(lines))
	}
	if errs, _ := lines[0]["errors"].([]any); len(errs) != 1 || errs[0] != want || lines[0]["is_error"] != true {
		t.Errorf("result line = %v", lines[0])
	}
}

func TestCursorFormat(t *testing.T) {
	bin := enginetest.BuildCursor(t)
	lines, stderr, code := run(t, bin, filepath.Join(t.TempDir(), "log"), "-p", "hello", "--output-format", "stream-json",
		"--stream-partial-output", "--force", "--trust", "--sandbox", "disabled", "--approve-mcps", "--api-key", "k")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if lines[0]["apiKeySource"] == nil || lines[len(lines)-1]["result"] != "echo: hello" {
		t.Errorf("lines = %v", lines)
	}
	// A Claude Code flag is unknown to Cursor's CLI.
	_, stderr, code = run(t, bin, filepath.Join(t.TempDir(), "log"), "-p", "x", "--verbose")
	if code != 1 || !strings.Contains(stderr, "unknown option '--verbose'") {
		t.Errorf("unknown flag: exit %d, stderr %q", code, stderr)
	}
}

func TestCrashAndUnknownDirective(t *testing.T) {
	bin := enginetest.Build(t)
	for _, tc := range []struct {
		prompt string
		code   int
	}{{"!crash 3", 3}, {"!bogus", 2}, {"!no-result", 0}} {
		lines, _, code := run(t, bin, filepath.Join(t.TempDir(), "log"), "-p", tc.prompt, "--output-format", "stream-json", "--verbose")
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d", tc.prompt, code, tc.code)
		}
		for _, l := range lines {
			if l["type"] == "result" {
				t.Errorf("%q: printed a result line", tc.prompt)
			}
		}
	}
}
