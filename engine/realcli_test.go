package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/parser"
)

// sleepCommand is the shell command the stop tests' fake models run: its
// sleep would outlive a careless kill, and it says its pid in sleep.pid.
const sleepCommand = "sleep 300 & echo $! > sleep.pid; wait"

// realStop runs a turn of a real CLI whose model runs sleepCommand in
// workdir, cancels it once the command's sleep is running (its pid file is
// there: OpenCode reports a tool only once it finished), and checks that
// the run ends with "stopped" and that the sleep, which the CLI started
// below itself, is gone too.
func realStop(t *testing.T, e engine.Engine, workdir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), realRunTimeout)
	defer cancel()
	stop, stopNow := context.WithCancel(ctx)
	defer stopNow()
	r, err := e.Run(stop, engine.Turn{Prompt: "Sleep.", Workdir: workdir, Mode: engine.ModeBypass})
	if err != nil {
		t.Fatal(err)
	}
	poll, endPoll := context.WithCancel(ctx)
	pidc := make(chan int, 1)
	go func() {
		pid := pollPID(poll, filepath.Join(workdir, "sleep.pid"))
		if pid > 0 {
			stopNow()
		}
		pidc <- pid
	}()
	var events []parser.Event
	for ev := range r.Events() {
		events = append(events, ev)
	}
	endPoll()
	pid := <-pidc
	if pid > 0 {
		t.Cleanup(func() { _ = realKill(pid) })
	}
	if ctx.Err() != nil {
		t.Fatalf("the stopped run did not end within %s", realRunTimeout)
	}
	if pid == 0 {
		t.Fatalf("the run ended before the tool ran; events: %s", realDump(events))
	}
	last := events[len(events)-1]
	if last.Type != parser.Error || last.Reason != parser.Stopped || last.Message != "stopped" {
		t.Errorf("the run ended with %s %q, want the error \"stopped\"; events: %s", last.Type, last.Message, realDump(events))
	}
	// The engine gives the tree two seconds between SIGTERM and SIGKILL.
	gone, cancelGone := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelGone()
	if !realWaitGone(gone, pid) {
		t.Errorf("the tool command's child (pid %d) survived the stop", pid)
	}
}

// pollPID polls for a pid file the agent's command writes; 0 when ctx
// ends first.
func pollPID(ctx context.Context, path string) int {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				return pid
			}
		}
		select {
		case <-ctx.Done():
			return 0
		case <-tick.C:
		}
	}
}

// TestNewEngineModes: each new engine honours exactly the modes its CLI
// can keep headless, and Run refuses the others before a process starts.
func TestNewEngineModes(t *testing.T) {
	for name, want := range map[string][]engine.Mode{
		"codex":    {engine.ModePlan, engine.ModeBypass},
		"gemini":   {engine.ModeAcceptEdits, engine.ModePlan, engine.ModeBypass},
		"opencode": {engine.ModeBypass},
	} {
		spec, ok := engine.Find(name)
		if !ok {
			t.Fatalf("%s is not in the registry", name)
		}
		if got := spec.HonouredModes(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s honours %v, want %v", name, got, want)
		}
		e, err := engine.New(name, engine.Config{Command: "/bin/true"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Run(context.Background(), engine.Turn{Prompt: "hi", Workdir: t.TempDir(), Mode: engine.ModeAsk}); !errors.Is(err, engine.ErrMode) {
			t.Errorf("%s ran an ask-mode turn: %v", name, err)
		}
	}
}

// realSkill makes a skills folder holding one skill, team-greeting, and
// returns the folder and the skill's description.
func realSkill(t *testing.T) (dir, description string) {
	t.Helper()
	dir = t.TempDir()
	description = "Greets the golem team with the house greeting."
	md := "---\nname: team-greeting\ndescription: " + description + "\n---\n\nSay \"Hello, golem team!\"\n"
	if err := os.MkdirAll(filepath.Join(dir, "team-greeting"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "team-greeting", "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, description
}
