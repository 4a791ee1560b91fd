package engine_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/sandbox"
	"github.com/golem-chat/golem/sandbox/sandboxtest"
)

// TestSandboxedStop: a stopped sandboxed turn ends "stopped" as soon as
// its CLI takes the SIGTERM (before the SIGKILL two seconds later),
// with each network.
func TestSandboxedStop(t *testing.T) {
	for _, network := range []sandbox.Network{sandbox.None, sandbox.Allowlist} {
		t.Run(string(network), func(t *testing.T) {
			e, logPath := fake(t, "claude-code", engine.Config{})
			work := sandboxtest.Dir(t)
			sb := sandboxtest.New(t, sandbox.Config{Network: network, Writable: []string{filepath.Dir(logPath)}}, sandbox.Options{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r, err := e.Run(ctx, engine.Turn{Prompt: "!text 5\n!sleep 30s", Workdir: work,
				Sandbox: sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: work})})
			if err != nil {
				t.Fatal(err)
			}
			for ev := range r.Events() { // its first text: the CLI runs
				if ev.Type == parser.Text || ev.Terminal() {
					break
				}
			}
			start := time.Now()
			cancel()
			var last parser.Event
			for ev := range r.Events() {
				last = ev
			}
			<-r.Exited()
			if took := time.Since(start); took > 1500*time.Millisecond || last.Reason != parser.Stopped { // SIGKILL comes at 2 s
				t.Errorf("the stop took %v and ended with %+v", took, last)
			}
		})
	}
}
