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

// stat is what golem reads of a process from /proc/<pid>/stat.
type stat struct {
	ppid, pgrp int
	start      uint64 // clock ticks after boot; field 22
	zombie     bool
}

// readStat reads a process's stat; ok is false when the process does not
// exist (or there is no /proc).
func readStat(pid int) (st stat, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false
	}
	// "pid (comm) state ppid pgrp ..."; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, false
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return stat{}, false
	}
	st.ppid, _ = strconv.Atoi(string(f[1]))
	st.pgrp, _ = strconv.Atoi(string(f[2]))
	st.start, _ = strconv.ParseUint(string(f[19]), 10, 64)
	st.zombie = f[0][0] == 'Z'
	return st, true
}

// atoi parses a /proc entry name as a pid.
func atoi(name string) (int, bool) {
	n, err := strconv.Atoi(name)
	return n, err == nil
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
		pid, ok := atoi(e.Name())
		if !ok {
			continue
		}
		if st, ok := readStat(pid); ok {
			children[st.ppid] = append(children[st.ppid], procID{pid, st.start})
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
	st, ok := readStat(p.pid)
	return ok && !st.zombie && st.start == p.start
}

// signal sends sig to p if it is still the same process.
func (p procID) signal(sig syscall.Signal) {
	if st, ok := readStat(p.pid); ok && st.start == p.start {
		syscall.Kill(p.pid, sig) // gone meanwhile: nothing to do
	}
}
