package engine

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golem-chat/golem/engine/enginetest"
)

// leftover starts the fake agent with prompt in a process group of its own,
// as a run does, and returns its group and the pid of its !hang child. The
// test is the agent's parent here, where init is once golem was killed; it
// reaps the agent at cleanup.
func leftover(t *testing.T, prompt string) (Group, int) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("StopLeftover needs /proc")
	}
	log := filepath.Join(t.TempDir(), "agent.log")
	cmd := exec.Command(enginetest.Build(t), "-p", prompt, "--output-format", "stream-json", "--verbose")
	cmd.Env = append(os.Environ(), "FAKE_AGENT_LOG="+log)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	g := groupOf(cmd.Process.Pid)
	if g.Start == 0 {
		t.Fatalf("no start time for pid %d", g.ID)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if inv := enginetest.ReadLog(t, log); len(inv) == 1 && inv[0].ChildPID != 0 {
			return g, inv[0].ChildPID
		}
		if time.Now().After(deadline) {
			t.Fatal("the fake agent did not log its child")
		}
		time.Sleep(10 * time.Millisecond) // a file another process writes: nothing to wait on
	}
}

func running(pid int) bool {
	st, ok := readStat(pid)
	return ok && !st.zombie
}

func TestStopLeftover(t *testing.T) {
	for _, tc := range []struct{ name, prompt string }{
		{"agent and child", "!hang"},
		{"agent ignores SIGTERM", "!ignore-term\n!hang"},
		{"child in a session of its own", "!hang setsid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, child := leftover(t, tc.prompt)
			if !StopLeftover(g) {
				t.Fatal("StopLeftover found nothing to stop")
			}
			if running(g.ID) || running(child) {
				t.Errorf("still running after StopLeftover: agent %v, child %v", running(g.ID), running(child))
			}
			if StopLeftover(g) {
				t.Error("a second StopLeftover found something again")
			}
		})
	}
}

// TestStopLeftoverGroupWithoutLeader: the agent has exited, a process it
// started lives on in its group.
func TestStopLeftoverGroupWithoutLeader(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("StopLeftover needs /proc")
	}
	cmd := exec.Command("sh", "-c", "sleep 600 >/dev/null 2>&1 & echo $!")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g := groupOf(cmd.Process.Pid)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	sleeper, _ := strconv.Atoi(strings.TrimSpace(line))
	t.Cleanup(func() { syscall.Kill(sleeper, syscall.SIGKILL) })
	if !running(sleeper) {
		t.Fatalf("the group's sleep (%d) is not running", sleeper)
	}
	if !StopLeftover(g) {
		t.Fatal("StopLeftover found nothing to stop")
	}
	if running(sleeper) {
		t.Error("the group's sleep is still running")
	}
}

// TestStopLeftoverLeavesOthersAlone: a pid whose start time is not the
// recorded one belongs to someone else; a group that is gone is nothing.
func TestStopLeftoverLeavesOthersAlone(t *testing.T) {
	g, child := leftover(t, "!hang")
	if StopLeftover(Group{ID: g.ID, Start: g.Start + 1}) {
		t.Error("StopLeftover stopped a process whose start time differs")
	}
	if StopLeftover(Group{ID: g.ID}) {
		t.Error("StopLeftover stopped a process without a start time")
	}
	if !running(g.ID) || !running(child) {
		t.Fatal("StopLeftover signalled a process that was not the recorded one")
	}
	syscall.Kill(-g.ID, syscall.SIGKILL)
	for deadline := time.Now().Add(15 * time.Second); running(g.ID) || running(child); {
		if time.Now().After(deadline) {
			t.Fatal("SIGKILL did not end the group")
		}
		time.Sleep(10 * time.Millisecond) // the child is not ours to wait for
	}
	if StopLeftover(g) {
		t.Error("StopLeftover found a group that was killed")
	}
}
