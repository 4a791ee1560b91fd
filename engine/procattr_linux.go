package engine

import "syscall"

// agentAttr puts the agent in a process group of its own (so that a stop
// reaches the tools it started) and has the kernel kill it when golem dies,
// however it dies: a replica's agents never outlive it, so that a replica
// that takes its conversations over never runs beside them. (The sandbox's
// --die-with-parent does the same for its whole namespace.)
func agentAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
