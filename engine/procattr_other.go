//go:build !linux

package engine

import "syscall"

// agentAttr puts the agent in a process group of its own; only Linux can
// also tie its life to golem's.
func agentAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
