package engine_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/parser"
)

// sleepCommand is the shell command the stop tests' fake models run: its
// sleep would outlive a careless kill, and it says its pid in sleep.pid.
const sleepCommand = "sleep 300 & echo $! > sleep.pid; wait"

// realStop runs a turn of a real CLI whose model runs sleepCommand in
// workdir, cancels it once the command's sleep is running, and checks that
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
	pidFile := filepath.Join(workdir, "sleep.pid")
	var events []parser.Event
	pid := 0
	for ev := range r.Events() {
		events = append(events, ev)
		if ev.Type == parser.ToolCall && pid == 0 {
			pid = realWaitPID(t, ctx, pidFile)
			t.Cleanup(func() { _ = realKill(pid) })
			stopNow()
		}
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
