package core_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/store"
)

// TestTurnsInFlightRecordTheirAgent: while a turn's agent runs, its record
// names the agent's process group (a stream's turn is recorded only then),
// and the record goes when the turn ends.
func TestTurnsInFlightRecordTheirAgent(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	for i, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			var waiting func()
			if stream {
				q := h.sinkMessage("!hang")
				waiting = func() { terminal(t, q) }
			} else {
				h.say("alice", "!hang")
				waiting = func() { h.rec.waitText("Stopped.") }
			}
			var invs []enginetest.Invocation
			for deadline := time.Now().Add(20 * time.Second); len(invs) <= i || invs[i].ChildPID == 0; {
				if time.Now().After(deadline) {
					t.Fatal("the fake agent never started its child")
				}
				time.Sleep(20 * time.Millisecond) // a file the agent writes: nothing to wait on
				invs = enginetest.ReadLog(t, h.log)
			}
			agent := invs[i].PID
			turns, err := h.store.InFlightTurns()
			if err != nil {
				t.Fatal(err)
			}
			if len(turns) != 1 || turns[0].AgentGroup != agent || turns[0].Stream != stream ||
				runtime.GOOS == "linux" && turns[0].AgentStart == 0 {
				t.Fatalf("turns in flight %+v, want one naming the agent's group %d", turns, agent)
			}
			h.say("alice", "/stop")
			waiting()
			h.d.Close(t.Context()) // waits for the turn's end
			if turns, err := h.store.InFlightTurns(); err != nil || len(turns) != 0 {
				t.Errorf("after the turn: in flight %+v, %v", turns, err)
			}
			h.stop()
			h.start()
		})
	}
}

// TestLeftStreamAgentIsStoppedAndForgotten: a stream's turn whose agent a
// hard kill left running has its agent stopped at the next start, and,
// the stream being gone, is forgotten without a notice.
func TestLeftStreamAgentIsStoppedAndForgotten(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	h := newHarness(t, chatLimits, nil)
	h.stop()
	// The agent as the killed golem left it: in a process group of its own.
	cmd := exec.Command(enginetest.Build(t), "-p", "!hang", "--output-format", "stream-json", "--verbose")
	cmd.Env = append(os.Environ(), "FAKE_AGENT_LOG="+h.log)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	child := waitChild(t, h.log)
	st, err := store.Open(h.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	left := store.InFlight{ID: "t1", Key: store.NewKey("rec", "", "x", ""), Platform: "rec", Channel: "x", Started: time.Now(), Stream: true,
		AgentGroup: cmd.Process.Pid, AgentStart: startTime(t, cmd.Process.Pid)}
	if err := st.BeginTurn(left); err != nil {
		t.Fatal(err)
	}
	st.Close()

	h.start()
	if alive(child) {
		t.Error("the left agent's child still runs after the restart")
	}
	cmd.Wait() // the agent, our child here, has ended
	if turns, err := h.store.InFlightTurns(); err != nil || len(turns) != 0 {
		t.Errorf("in flight after the restart: %+v, %v", turns, err)
	}
	h.say("alice", "hi")
	h.rec.waitText("echo: hi")
	if all := h.rec.all(); strings.Contains(all, "restarted") {
		t.Errorf("a stream's turn got a notice on the platform: %q", all)
	}
}

// startTime is field 22 of /proc/<pid>/stat.
func startTime(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	n, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, after, _ := bytes.Cut(b, []byte(") "))
	return !bytes.HasPrefix(after, []byte("Z"))
}
