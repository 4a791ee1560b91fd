package engine

import (
	"os"
	"slices"
	"syscall"
	"time"
)

// Group names a run's agent CLI process, which leads the run's process
// group, so that a later golem can stop what an earlier one left running
// (a golem killed outright takes none of its agents with it). Turn.OnStart
// hands it to the caller, who keeps it with the turn in flight.
type Group struct {
	// ID is the CLI's pid, which is also its process group id.
	ID int
	// Start is the CLI's start time in clock ticks after boot
	// (/proc/<pid>/stat field 22), so that a pid reused by an unrelated
	// process is never taken for it; 0 where there is no /proc.
	Start uint64
}

// groupOf returns the Group led by pid, just started.
func groupOf(pid int) Group {
	g := Group{ID: pid}
	if st, ok := readStat(pid); ok {
		g.Start = st.start
	}
	return g
}

// StopLeftover stops what is left of g, a process group an earlier golem
// started and could not stop: if its leader is still the same process (same
// start time), or is gone while processes of its group live on, the group
// and every descendant of the leader (tool commands in sessions of their
// own) get SIGTERM, then SIGKILL after two seconds, and StopLeftover
// returns once they are gone (or a further two seconds passed) with true.
// It returns false at once when nothing of g is left, when the pid now
// belongs to another process, or without /proc (g.Start is 0), where a
// reused pid cannot be told apart and nothing is signalled.
func StopLeftover(g Group) bool {
	if g.ID <= 1 || g.Start == 0 || g.ID == syscall.Getpgrp() {
		return false
	}
	leader, ok := readStat(g.ID)
	var tree []procID
	switch {
	case ok && leader.start != g.Start:
		// Another process has the pid; a pid is not reused while it
		// names a process group, so g's group is gone.
		return false
	case ok && !leader.zombie:
		tree = descendants(g.ID)
	default:
		// The leader has exited; its group may live on without it.
		if len(groupMembers(g)) == 0 {
			return false
		}
	}
	left := func() bool { return len(groupMembers(g)) > 0 || slices.ContainsFunc(tree, procID.alive) }
	syscall.Kill(-g.ID, syscall.SIGTERM)
	for _, d := range tree {
		d.signal(syscall.SIGTERM)
	}
	wait := func(d time.Duration) {
		for deadline := time.Now().Add(d); left() && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond) // not our children: no exit notification to wait on
		}
	}
	wait(killGrace)
	if left() {
		syscall.Kill(-g.ID, syscall.SIGKILL)
		for _, d := range tree {
			d.signal(syscall.SIGKILL)
		}
		wait(killGrace)
	}
	return true
}

// groupMembers returns the live (not zombie) processes of g's process
// group. They all started no earlier than its leader, which tells them
// from a group that reuses the id later.
func groupMembers(g Group) []procID {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procID
	for _, e := range entries {
		pid, ok := atoi(e.Name())
		if !ok {
			continue
		}
		if st, ok := readStat(pid); ok && st.pgrp == g.ID && !st.zombie && st.start >= g.Start {
			out = append(out, procID{pid, st.start})
		}
	}
	return out
}
