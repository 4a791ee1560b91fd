// Package enginetest provides a fake agent CLI for tests: a real process
// that parses the real CLIs' flags and prints their stream-json output with
// real timing, scripted by directives in the prompt. Use it as the engine's
// command:
//
//	cfg := engine.Config{Command: enginetest.Build(t)}        // Claude Code
//	cfg := engine.Config{Command: enginetest.BuildCursor(t)}  // Cursor
//
// # Formats
//
// The fake speaks Claude Code's format (`claude -p PROMPT --output-format
// stream-json --verbose ...`) unless the base name of its argv[0] is
// `agent` (BuildCursor returns such a symlink) or env FAKE_AGENT_FORMAT is
// "cursor"; then it speaks Cursor's (`agent -p PROMPT --output-format
// stream-json --stream-partial-output --force ...`). It accepts the flags
// of the real CLI it plays that golem uses (Claude Code's fake also
// --max-turns, --append-system-prompt and --add-dir) and fails like the
// real one on any other (stderr "error: unknown option '--x'", exit 1).
// Claude Code's fake also refuses stream-json without --verbose, as the
// real one does.
//
// Claude Code's fake prints system/init, then for each text block
// stream_event lines (message_start, content_block_start, text deltas,
// content_block_stop, message_delta, message_stop) when
// --include-partial-messages is given, and always the whole assistant line;
// tool uses are an assistant tool_use line and a user tool_result line; the
// run ends with a result line carrying session_id, duration_ms,
// total_cost_usd and num_turns. Cursor's fake prints system/init and the
// user line, then text deltas (with --stream-partial-output) followed by the
// segment's summary line, tool_call started/completed lines (call_id,
// `shellToolCall` for Bash, `<name>ToolCall` otherwise) and a result line.
//
// # Sessions
//
// Without --resume the fake makes up a new random session id; with
// --resume ID it keeps ID. Resuming an id that starts with "unknown" fails
// like the real Claude Code CLI: stderr `No conversation found with session
// ID: <id>`, one stdout result line with is_error and errors[] (Cursor: an
// error result with that text), exit 1.
//
// # Directives
//
// By default the fake answers "echo: <prompt>" in four deltas 5 ms apart.
// Prompt lines starting with "!" are directives, run in order after the
// init line; the other lines are the text echoed after them (no echo when
// the prompt holds only directives). An unknown directive exits 2.
//
//	!sleep 300ms        pause
//	!text N             answer N characters of text in deltas of about 20
//	!delta-rate D N [S] answer N deltas of S characters (default 1), one every D
//	                    on average (a schedule: a late one is written at once)
//	!sleep-until T      pause until unix nanoseconds T (turns that start together)
//	!fence              answer a ~5,000-character Markdown text with a long code fence
//	!huge N             answer one text block of N bytes: its lines are longer than N
//	!stamp              answer "stamp:<unix nanoseconds>", the time the line is written
//	!write PATH TEXT    write TEXT to the file PATH (relative to the working directory)
//	!tool NAME {JSON}   a tool use with these args, then its result "fake output of NAME"
//	!sh COMMAND         a Bash tool use (printed before it runs) that runs COMMAND with /bin/sh in the working
//	                    directory; its result is what it printed, an error if it failed
//	!ask NAME {JSON}    a tool use that needs permission (see Approvals)
//	!garbage            print non-JSON, broken JSON, ANSI, binary and unknown-type lines
//	!stderr TEXT        print TEXT on stderr
//	!error MSG          end with an is_error result whose text is MSG, exit 1
//	!crash N            print two lines on stderr and exit N without a result
//	!no-result          exit 0 without a result
//	!exit N             after the result, exit N
//	!linger D           after the result, stay alive for D before exiting
//	                    (as Claude Code writes its session file then)
//	!no-newline         the result line has no trailing newline
//	!ignore-term        ignore SIGTERM (the engine must escalate to SIGKILL)
//	!hang               wait forever; a child `sleep 600` (started at launch,
//	                    holding stderr, pid in the log's child_pid) waits too
//	!hang setsid        the same, but the child runs in a session of its own
//	                    (as Claude Code's tool commands do), outside the group
//	!await              wait until a user message steered in on stdin waits to
//	                    be taken in, or one arrived since the turn began or
//	                    the last !await (or stdin ends); see Steering
//
// # Approvals
//
// With --input-format stream-json (as golem runs Claude Code) the fake
// reads the prompt from the first stdin line, a stream-json user message,
// and after its result line waits for stdin to close before it exits, as
// the real CLI does. `!ask NAME {JSON}` with --permission-prompt-tool
// stdio prints the tool use and a control_request line (request_id
// "req-NNN", subtype can_use_tool, the input, and one suggestion: setMode
// acceptEdits for the session), then waits for the control_response on
// stdin: allowed, the result is "fake output of NAME" (with
// "; answers: {...}" when updatedInput carries answers); denied, an error
// result "denied: MESSAGE"; stdin closed, an error result "Tool permission
// stream closed before response received". It runs without asking with
// --dangerously-skip-permissions, for Write and Edit with
// --permission-mode acceptEdits, and after an allow that carried
// updatedPermissions.
//
// # Steering
//
// With --input-format stream-json the fake reads stdin all along, as the
// real CLI does, and treats more user messages as the real one does: one
// queued while the turn runs is taken in between two steps (two model
// calls of the real CLI) and answered at once with the text "heard: TEXT";
// one still queued when the steps are done, or arriving after the result,
// gets a turn of its own (system/init, its own directives or "echo: TEXT",
// a result line) before the fake waits for stdin again.
// --replay-user-messages echoes each message when it is taken in (the
// prompt too) as a user line with "isReplay": true; with env
// FAKE_AGENT_NO_REPLAY set it echoes nothing (a CLI that does not).
//
// # Log
//
// When env FAKE_AGENT_LOG names a file, each invocation appends one JSON line
// to it (see Invocation): argv, the prompt, cwd, the variables ANTHROPIC_API_KEY,
// CURSOR_API_KEY, CLAUDECODE and GOLEM_TEST_* when set, the whole
// environment, pid, session id,
// the !hang child's pid and the time the process began (started_ns).
// ReadLog reads the file.
package enginetest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Build compiles the fake agent once per test process (without the race
// detector) and returns the binary's path. It speaks Claude Code's format.
// The binary is cached in the temporary directory under a name derived
// from its source and the Go version, so test processes share one build.
func Build(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() { buildPath, buildErr = build() })
	if buildErr != nil {
		t.Fatalf("enginetest: %v", buildErr)
	}
	return buildPath
}

// BuildCursor returns the path of a symlink named `agent` to the fake agent,
// which makes it speak Cursor's format.
func BuildCursor(t testing.TB) string {
	t.Helper()
	return filepath.Join(filepath.Dir(Build(t)), "agent")
}

func build() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("build fake agent: cannot locate the enginetest source")
	}
	src := filepath.Join(filepath.Dir(file), "fakeagent")
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	files, _ := filepath.Glob(filepath.Join(src, "*.go"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("build fake agent: %w", err)
		}
		h.Write(b)
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("golem-fakeagent-%x", h.Sum(nil)[:8]))
	bin := filepath.Join(dir, "fakeagent")
	if _, err := os.Stat(filepath.Join(dir, "agent")); err == nil {
		return bin, nil
	}

	// Build beside it and rename into place: concurrent test processes
	// either win the rename or use the winner's build.
	tmp, err := os.MkdirTemp(os.TempDir(), "golem-fakeagent-build-")
	if err != nil {
		return "", fmt.Errorf("build fake agent: %w", err)
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(tmp, "fakeagent"), ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("build fake agent: %w\n%s", err, out)
	}
	if err := os.Symlink("fakeagent", filepath.Join(tmp, "agent")); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("build fake agent: link agent: %w", err)
	}
	if err := os.Rename(tmp, dir); err == nil {
		return bin, nil
	}
	if _, err := os.Stat(filepath.Join(dir, "agent")); err == nil {
		os.RemoveAll(tmp) // another test process won
		return bin, nil
	}
	return filepath.Join(tmp, "fakeagent"), nil // dir is damaged: use this build where it is
}

// Invocation is one line of the fake agent's log: one run of the CLI.
type Invocation struct {
	Argv      []string          `json:"argv"`
	Cwd       string            `json:"cwd"`
	Env       map[string]string `json:"env"`     // only the logged variables that were set
	Environ   []string          `json:"environ"` // the whole environment, KEY=VALUE
	PID       int               `json:"pid"`
	SessionID string            `json:"session_id"`
	ChildPID  int               `json:"child_pid"` // the !hang child; 0 without one
	// Prompt is the prompt the fake got: its argument, or the user
	// message read from stdin with --input-format stream-json.
	Prompt string `json:"prompt"`
	// Started is when the process began, in Unix nanoseconds: how long a
	// caller took to start the CLI is Started minus the time it asked.
	Started int64 `json:"started_ns"`
}

// Has reports whether flag (e.g. "--verbose") appears in the arguments.
func (inv Invocation) Has(flag string) bool { return slices.Contains(inv.Argv[1:], flag) }

// Flag returns the argument after flag (e.g. "--resume") and whether the
// flag appears with a value.
func (inv Invocation) Flag(flag string) (string, bool) {
	args := inv.Argv[1:]
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v, true
		}
	}
	return "", false
}

// ReadLog returns the invocations logged in path ($FAKE_AGENT_LOG), oldest
// first; a missing file is no invocation.
func ReadLog(t testing.TB, path string) []Invocation {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("enginetest: read log: %v", err)
	}
	var out []Invocation
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var inv Invocation
		if err := json.Unmarshal(sc.Bytes(), &inv); err != nil {
			t.Fatalf("enginetest: log line %q: %v", sc.Text(), err)
		}
		out = append(out, inv)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("enginetest: read log: %v", err)
	}
	return out
}
