package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/parser"
)

// TestOutcomes runs the fake agent through both engines with scripted
// prompts and checks what the caller gets.
func TestOutcomes(t *testing.T) {
	const mib16 = 16 << 20
	tests := []struct {
		name   string
		prompt string
		// want: the terminal type, text in the answer (exact when
		// exactText), words in the error message.
		terminal  parser.Type
		text      string
		exactText bool
		errWords  []string
		reason    parser.Reason // of the terminal error
	}{
		{name: "echo", prompt: "hello there", terminal: parser.Done, text: "echo: hello there", exactText: true},
		{name: "16 MiB line", prompt: fmt.Sprintf("!huge %d", mib16), terminal: parser.Done, text: strings.Repeat("h", mib16), exactText: true},
		{name: "last line without newline", prompt: "!no-newline\nbye", terminal: parser.Done, text: "echo: bye", exactText: true},
		{name: "garbage lines skipped", prompt: "!garbage\nstill here", terminal: parser.Done, text: "echo: still here", exactText: true},
		{name: "many deltas", prompt: "!text 5000", terminal: parser.Done, text: strings.Repeat("the quick brown fox jumps over the lazy dog ", 200)[:5000], exactText: true},
		{name: "fence", prompt: "!fence", terminal: parser.Done, text: "```go\npackage main"},
		{name: "crash", prompt: "!crash 3", terminal: parser.Error, reason: parser.Crashed,
			errWords: []string{"without a result", "exit code 3", "fake agent: something went badly wrong\nfake agent: crashing with exit code 3"}},
		{name: "exit without result", prompt: "!stderr last words\n!no-result", terminal: parser.Error, reason: parser.Crashed,
			errWords: []string{"without a result", "exit code 0", "last words"}},
		{name: "error result", prompt: "!error the model is overloaded", terminal: parser.Error, errWords: []string{"the model is overloaded"}},
		// The CLI's own error worded like golem's outcomes is still the CLI's error.
		{name: "error result \"stopped\"", prompt: "!error stopped", terminal: parser.Error, errWords: []string{"stopped"}},
		{name: "error result \"timed out\"", prompt: "!error timed out", terminal: parser.Error, errWords: []string{"timed out"}},
		{name: "non-zero exit after done", prompt: "!exit 4\nfine", terminal: parser.Done, text: "echo: fine", exactText: true},
	}
	for _, name := range []string{"claude-code", "cursor"} {
		for _, tc := range tests {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				e, _ := fake(t, name, engine.Config{})
				events := runTurn(t, e, engine.Turn{Prompt: tc.prompt})
				end := lastEvent(events)
				if end.Type != tc.terminal {
					t.Fatalf("terminal = %s %q, want %s", end.Type, end.Message, tc.terminal)
				}
				got := textOf(events)
				if tc.exactText && got != tc.text || !strings.Contains(got, tc.text) {
					t.Errorf("answer text (%d bytes) = %.200q; want %.200q", len(got), got, tc.text)
				}
				for _, w := range tc.errWords {
					if !strings.Contains(end.Message, w) {
						t.Errorf("error %q does not say %q", end.Message, w)
					}
				}
				if end.Reason != tc.reason {
					t.Errorf("terminal reason = %q, want %q", end.Reason, tc.reason)
				}
				if end.Type == parser.Done && end.SessionID == "" {
					t.Errorf("done without a session id: %+v", end)
				}
			})
		}
	}
}

func TestToolEvents(t *testing.T) {
	for _, name := range []string{"claude-code", "cursor"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, _ := fake(t, name, engine.Config{})
			events := runTurn(t, e, engine.Turn{Prompt: "!tool Bash {\"command\":\"go test ./...\"}\nran it"})
			var call, result *parser.Event
			for i := range events {
				switch events[i].Type {
				case parser.ToolCall:
					call = &events[i]
				case parser.ToolResult:
					result = &events[i]
				}
			}
			if call == nil || result == nil || call.ID == "" || result.ID != call.ID {
				t.Fatalf("want a tool call and its result; events: %+v", events)
			}
			if !bytes.Contains(call.Args, []byte(`"command":"go test ./..."`)) || !strings.Contains(result.Content, "fake output of Bash") {
				t.Errorf("call %s %s, result %q", call.Name, call.Args, result.Content)
			}
			if textOf(events) != "echo: ran it" || lastEvent(events).Type != parser.Done {
				t.Errorf("events: %+v", events)
			}
		})
	}
}

// waitInvocation polls the fake's log until an invocation appears.
func waitInvocation(t *testing.T, logPath string) enginetest.Invocation {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if invs := enginetest.ReadLog(t, logPath); len(invs) > 0 {
			return invs[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the fake agent never started")
	return enginetest.Invocation{}
}

// alive reports whether pid is a running process (a zombie is not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, after, _ := bytes.Cut(stat, []byte(") "))
	return !bytes.HasPrefix(after, []byte("Z"))
}

func waitGone(t *testing.T, what string, pid int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) is still running", what, pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStopKillsGroup cancels a hanging run: it ends "stopped" and the
// agent's child dies with it, also when the agent ignores SIGTERM.
func TestStopKillsGroup(t *testing.T) {
	for _, tc := range []struct{ name, engine, prompt string }{
		{"claude", "claude-code", "!hang"},
		{"cursor", "cursor", "!hang"},
		{"ignores SIGTERM", "claude-code", "!ignore-term\n!hang"},
		{"child in its own session", "claude-code", "!hang setsid"},
		{"ignores SIGTERM, child in its own session", "cursor", "!ignore-term\n!hang setsid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, logPath := fake(t, tc.engine, engine.Config{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r, err := e.Run(ctx, engine.Turn{Prompt: tc.prompt, Workdir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			inv := waitInvocation(t, logPath)
			if inv.ChildPID == 0 || !alive(inv.ChildPID) {
				t.Fatalf("the fake's sleep child is not running: %+v", inv)
			}
			cancel()
			events := collect(t, r)
			if end := lastEvent(events); end.Type != parser.Error || end.Message != "stopped" || end.Reason != parser.Stopped {
				t.Errorf("terminal = %+v, want error stopped", end)
			}
			waitGone(t, "the agent", inv.PID)
			waitGone(t, "the agent's child", inv.ChildPID)
		})
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	e, logPath := fake(t, "claude-code", engine.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r, err := e.Run(ctx, engine.Turn{Prompt: "!text 20\n!hang", Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	events := collect(t, r)
	if end := lastEvent(events); end.Type != parser.Error || end.Message != "timed out" || end.Reason != parser.TimedOut {
		t.Errorf("terminal = %+v, want error timed out", end)
	}
	inv := enginetest.ReadLog(t, logPath)[0]
	waitGone(t, "the agent's child", inv.ChildPID)
}

// TestAbandonedRun checks that a consumer that stops reading and cancels
// leaks no goroutine, and still finds the terminal event last.
func TestAbandonedRun(t *testing.T) {
	e, _ := fake(t, "claude-code", engine.Config{})
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	r, err := e.Run(ctx, engine.Turn{Prompt: "!text 200000\n!hang", Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	<-r.Events() // the run is streaming; now stop reading
	cancel()
	deadline := time.Now().Add(15 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines still running, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
	events := collect(t, r)
	if end := lastEvent(events); end.Message != "stopped" {
		t.Errorf("terminal = %+v", end)
	}
}

func TestResume(t *testing.T) {
	for _, name := range []string{"claude-code", "cursor"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, logPath := fake(t, name, engine.Config{})
			events := runTurn(t, e, engine.Turn{Prompt: "again", SessionID: "s-42"})
			if end := lastEvent(events); end.Type != parser.Done || end.SessionID != "s-42" {
				t.Errorf("resumed run ended %+v, want done in session s-42", end)
			}
			for _, ev := range events {
				if ev.Type == parser.Warning {
					t.Errorf("unexpected warning %+v", ev)
				}
			}
			if invs := enginetest.ReadLog(t, logPath); len(invs) != 1 {
				t.Errorf("%d invocations, want 1", len(invs))
			}
		})
	}
}

func TestResumeFallback(t *testing.T) {
	for _, name := range []string{"claude-code", "cursor"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, logPath := fake(t, name, engine.Config{})
			var mu sync.Mutex
			var groups []engine.Group
			onStart := func(g engine.Group) {
				mu.Lock()
				defer mu.Unlock()
				groups = append(groups, g)
			}
			events := runTurn(t, e, engine.Turn{Prompt: "remember me", SessionID: "unknown-9", OnStart: onStart})
			var warnings []parser.Event
			for _, ev := range events {
				if ev.Type == parser.Warning {
					warnings = append(warnings, ev)
				}
			}
			if len(warnings) != 1 || !warnings[0].SessionReset || !strings.Contains(warnings[0].Message, "unknown-9") {
				t.Fatalf("want one SessionReset warning naming the session; events: %+v", events)
			}
			end := lastEvent(events)
			if end.Type != parser.Done || end.SessionID == "" || end.SessionID == "unknown-9" {
				t.Errorf("terminal = %+v, want done with a new session id", end)
			}
			if textOf(events) != "echo: remember me" {
				t.Errorf("answer = %q", textOf(events))
			}
			invs := enginetest.ReadLog(t, logPath)
			if len(invs) != 2 {
				t.Fatalf("%d invocations, want 2", len(invs))
			}
			if id, _ := invs[0].Flag("--resume"); id != "unknown-9" {
				t.Errorf("first run resumed %q", id)
			}
			if invs[1].Has("--resume") {
				t.Errorf("retry has --resume: %q", invs[1].Argv)
			}
			if invs[1].SessionID != end.SessionID {
				t.Errorf("done session %s, retry's %s", end.SessionID, invs[1].SessionID)
			}
			// Each process was announced, the retry's too.
			mu.Lock()
			defer mu.Unlock()
			if len(groups) != 2 || groups[0].ID != invs[0].PID || groups[1].ID != invs[1].PID {
				t.Fatalf("OnStart got %+v, want the groups of pids %d and %d", groups, invs[0].PID, invs[1].PID)
			}
			for _, g := range groups {
				if runtime.GOOS == "linux" && g.Start == 0 {
					t.Errorf("group %+v has no start time", g)
				}
			}
		})
	}
}

// TestNoResumeFallback: errors that are not resume failures, or that come
// after answer text, end the run without a retry.
func TestNoResumeFallback(t *testing.T) {
	for _, tc := range []struct{ name, prompt, session string }{
		{"no session to resume", "!error session storage is full", ""},
		{"other error", "!error rate limited", "s-1"},
		{"after answer text", "!text 30\n!error lost the session", "s-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, logPath := fake(t, "claude-code", engine.Config{})
			events := runTurn(t, e, engine.Turn{Prompt: tc.prompt, SessionID: tc.session})
			if end := lastEvent(events); end.Type != parser.Error {
				t.Errorf("terminal = %+v, want the agent's error", end)
			}
			if n := len(enginetest.ReadLog(t, logPath)); n != 1 {
				t.Errorf("%d invocations, want 1 (no retry)", n)
			}
		})
	}
}

func TestWorkdirErrors(t *testing.T) {
	e, _ := fake(t, "claude-code", engine.Config{})
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	for _, dir := range []string{"", filepath.Join(t.TempDir(), "missing"), file} {
		if _, err := e.Run(context.Background(), engine.Turn{Prompt: "x", Workdir: dir}); err == nil {
			t.Errorf("Run in %q started", dir)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Run(ctx, engine.Turn{Prompt: "x", Workdir: t.TempDir()}); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a cancelled context: %v", err)
	}
}

// TestStreamsWhileRunning checks that events arrive as the CLI prints them,
// not when it exits: the agent hangs after its first text.
func TestStreamsWhileRunning(t *testing.T) {
	for _, name := range []string{"claude-code", "cursor"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, _ := fake(t, name, engine.Config{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r, err := e.Run(ctx, engine.Turn{Prompt: "!text 40\n!hang", Workdir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case ev := <-r.Events():
				if ev.Type != parser.Text {
					t.Errorf("first event %+v, want text", ev)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no event while the agent runs")
			}
			cancel()
			if end := lastEvent(collect(t, r)); end.Message != "stopped" {
				t.Errorf("terminal = %+v", end)
			}
		})
	}
}

// TestSlowConsumer: a consumer that lags behind by more than the engine's
// two-second grace for pipes held open after the agent exited still gets
// every event, the result included. The agent's last lines wait in the
// stdout pipe meanwhile.
func TestSlowConsumer(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"claude-code", "cursor"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, logPath := fake(t, name, engine.Config{})
			r, err := e.Run(context.Background(), engine.Turn{Prompt: "!text 5000", Workdir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			waitGone(t, "the agent", waitInvocation(t, logPath).PID)
			// The consumer is busy elsewhere for longer than the grace.
			time.Sleep(3 * time.Second)
			events := collect(t, r)
			if end := lastEvent(events); end.Type != parser.Done {
				t.Errorf("terminal = %+v, want done", end)
			}
			if got := textOf(events); got != strings.Repeat("the quick brown fox jumps over the lazy dog ", 200)[:5000] {
				t.Errorf("answer text has %d bytes, want the 5000 the agent wrote", len(got))
			}
		})
	}
}
