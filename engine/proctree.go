package engine

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// A process group does not hold everything an agent starts: Claude Code
// runs each tool command in a session of its own (setsid), so a signal to
// the CLI's group misses them, and once the CLI exits they are re-parented
// and nobody's descendants any more. Stopping a run therefore takes a
// snapshot of the CLI's process tree (from /proc, before any signal) and
// signals every process in it as well as the group.

// procID names one process: a pid and its start time, so that a pid reused
// by an unrelated process is never signalled.
type procID struct {
	pid   int
	start uint64 // clock ticks after boot; /proc/<pid>/stat field 22
}

// procStat reads a process's parent pid, start time and whether it is a
// zombie; ok is false when the process does not exist.
func procStat(pid int) (ppid int, start uint64, zombie, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false, false
	}
	// "pid (comm) state ppid pgrp ..."; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false, false
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return 0, 0, false, false
	}
	ppid, _ = strconv.Atoi(string(f[1]))
	start, _ = strconv.ParseUint(string(f[19]), 10, 64)
	return ppid, start, f[0][0] == 'Z', true
}

// descendants returns the processes below root (not root itself), found by
// their parent pids in /proc. Without /proc it returns nil.
func descendants(root int) []procID {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]procID{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, start, _, ok := procStat(pid); ok {
			children[ppid] = append(children[ppid], procID{pid, start})
		}
	}
	var out []procID
	queue := []int{root}
	for len(queue) > 0 {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
		queue = queue[1:]
	}
	return out
}

// alive reports whether p is still the same, running (not zombie) process.
func (p procID) alive() bool {
	_, start, zombie, ok := procStat(p.pid)
	return ok && !zombie && start == p.start
}

// signal sends sig to p if it is still the same process.
func (p procID) signal(sig syscall.Signal) {
	if _, start, _, ok := procStat(p.pid); ok && start == p.start {
		syscall.Kill(p.pid, sig) // gone meanwhile: nothing to do
	}
}
