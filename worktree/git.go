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
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	// No prompts (a push asking for a password would hang), messages in
	// English so they can be shown as they are, no pager.
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GIT_PAGER=cat")
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
