package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// ErrNotRepository is returned for a folder that is not inside a git
// repository.
var ErrNotRepository = errors.New("not a git repository")

// git runs the git CLI in dir with args and returns its standard output,
// trimmed. Each call is bounded by timeout as well as ctx; a failure
// carries git's own message (its stderr), never the output.
func git(ctx context.Context, timeout time.Duration, dir string, args ...string) (string, error) {
	return gitEnv(ctx, timeout, dir, nil, args...)
}

// gitEnv is git with env added to the environment.
func gitEnv(ctx context.Context, timeout time.Duration, dir string, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The worktree is the agent's: its git metadata may hold what the
	// agent planted (found by review: a core.fsmonitor command ran on the
	// host at the hourly cleanup, with golem's tokens in its environment).
	// So golem's own git runs no fsmonitor and no hooks, and gets only the
	// environment it needs, never golem's.
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"}, args...)...)
	cmd.Dir = dir
	// No prompts (a push asking for a password would hang), messages in
	// English so they can be shown as they are, no pager.
	cmd.Env = append(gitEnviron(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GIT_PAGER=cat")
	cmd.Env = append(cmd.Env, env...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("git %s: %w", args[0], ctx.Err())
		}
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "not a git repository") {
			return "", fmt.Errorf("git %s: %w", args[0], ErrNotRepository)
		}
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", args[0], msg)
	}
	return strings.TrimRight(out.String(), "\n"), nil
}

// gitEnviron is the part of golem's environment its git needs: where
// programs and the home folder (git's own config) are, and whose it is.
func gitEnviron() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "XDG_CONFIG_HOME"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}
