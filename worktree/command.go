package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Command is the outcome of a command run in a worktree.
type Command struct {
	Output    string // stdout and stderr as they came, at most the limit
	Truncated bool   // the command printed more than the limit
	// Err is nil when the command exited 0; otherwise its exit status, or
	// context.DeadlineExceeded when it ran out of time (it is then killed
	// with every process it started).
	Err error
}

// Run runs command with sh -c in w.Dir, {branch} replaced by w.Branch
// (golem's branch names need no quoting), for at most timeout, keeping
// at most limit bytes of what it prints. It runs in a process group of its
// own, so a timeout kills what it started too. An error is returned only
// when the command could not start.
func Run(ctx context.Context, w Workspace, command string, timeout time.Duration, limit int) (Command, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command("sh", "-c", strings.ReplaceAll(command, "{branch}", w.Branch))
	cmd.Dir = w.Dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GOLEM_BRANCH="+w.Branch)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &capped{limit: limit}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return Command{}, fmt.Errorf("worktree: run %q: %w", command, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what it left behind
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		err = ctx.Err()
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer after %s: %w", timeout, err)
		}
	}
	text, truncated := out.result()
	return Command{Output: text, Truncated: truncated, Err: err}, nil
}

// capped keeps the first limit bytes written to it and counts the rest.
type capped struct {
	mu      sync.Mutex
	limit   int
	buf     bytes.Buffer
	dropped bool
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if room := c.limit - c.buf.Len(); room < n {
		c.dropped = true
		p = p[:max(room, 0)]
	}
	c.buf.Write(p)
	return n, nil // what is dropped is not an error: the command goes on
}

func (c *capped) result() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String(), c.dropped
}
