package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Credentials says where an engine's CLI finds what lets it call its
// model, so that `bot doctor` can tell a CLI that will answer from one that
// will fail on the first message. Nothing reads the files: their presence
// is the whole check, and no key is ever printed.
type Credentials struct {
	// KeyEnv are the environment variables the CLI takes an API key (or a
	// long-lived token) from; any one set is enough. The engine's api_key
	// sets the first of them.
	KeyEnv []string
	// LoginFiles returns the files a logged-in CLI keeps its login in, for
	// the child's environment as getenv reads it (HOME, CODEX_HOME, ...);
	// one of them present counts as logged in.
	LoginFiles func(getenv func(string) string) []string
	// Login says how to log in, for the message when neither is there.
	Login string
}

// inHome returns a LoginFiles that finds rel below dirEnv when it is set,
// else below HOME/def.
func inHome(dirEnv, def, rel string) func(func(string) string) []string {
	return func(getenv func(string) string) []string {
		if dir := envDir(getenv, dirEnv, def); dir != "" {
			return []string{filepath.Join(dir, rel)}
		}
		return nil
	}
}

// Health is what Checkup learned of an engine's CLI.
type Health struct {
	Path    string // the CLI that Run would start
	Version string // the first line it printed for --version
	// Credentials says how the CLI authenticates ("ANTHROPIC_API_KEY is
	// set", "logged in: /home/golem/.claude/.credentials.json"), or that
	// golem cannot tell.
	Credentials string
}

// ErrNoVersion is wrapped by Checkup's error when the CLI does not answer
// --version in time or fails it.
var ErrNoVersion = errors.New("the CLI does not answer --version")

// ErrNoCredentials is wrapped by Checkup's error when the CLI has neither
// an API key nor a login.
var ErrNoCredentials = errors.New("no API key and no login")

// Checkup finds the CLI that set configures, runs it with --version (in a
// process group of its own, killed when ctx ends) and looks for its API key
// or login, in the environment the CLI would get. The error wraps
// ErrNotInstalled, ErrNoVersion or ErrNoCredentials and says what to do;
// Health holds what was learned before it.
func Checkup(ctx context.Context, spec Spec, set Settings) (Health, error) {
	cfg := *set.Base()
	var h Health
	eng := set.Engine()
	path, err := eng.Lookup()
	if err != nil {
		return h, err
	}
	h.Path = path
	env := agentEnv(spec, cfg, "", nil) // the key, if any, is in cfg
	if h.Version, err = version(ctx, path, env); err != nil {
		return h, fmt.Errorf("engine %s: %s: %w: %w", spec.Name, path, ErrNoVersion, err)
	}
	h.Credentials, err = credentials(spec, cfg, env)
	return h, err
}

// version runs path --version and returns its first line.
func version(ctx context.Context, path string, env []string) (string, error) {
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = env
	cmd.Dir = os.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second // a child that keeps stdout open does not hold us
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return "", fmt.Errorf("no answer within the time allowed: %w", ctx.Err())
	}
	first, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	if err != nil {
		if first != "" {
			return "", fmt.Errorf("%w: %s", err, redact(first))
		}
		return "", err
	}
	if first == "" {
		return "", errors.New("it printed nothing")
	}
	return redact(first), nil
}

// credentials says how the CLI will authenticate, in the environment env.
func credentials(spec Spec, cfg Config, env []string) (string, error) {
	c := spec.Credentials
	if len(c.KeyEnv) == 0 && c.LoginFiles == nil {
		return "not checked: golem does not know where this CLI keeps its login", nil
	}
	if cfg.APIKey != "" {
		return "api_key is set in bot.yaml (passed as " + c.KeyEnv[0] + ")", nil
	}
	getenv := func(name string) string {
		v := ""
		for _, kv := range env { // the last one wins, as for exec
			if k, val, ok := strings.Cut(kv, "="); ok && k == name {
				v = val
			}
		}
		return v
	}
	for _, k := range c.KeyEnv {
		if getenv(k) != "" {
			return k + " is set", nil
		}
	}
	if c.LoginFiles != nil {
		for _, f := range c.LoginFiles(getenv) {
			if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
				return "logged in: " + f + " is present", nil
			}
		}
	}
	var b strings.Builder
	if len(c.KeyEnv) > 0 {
		fmt.Fprintf(&b, "set engines.%s.api_key (or %s)", spec.Name, strings.Join(c.KeyEnv, " or "))
	}
	if c.Login != "" {
		if len(c.KeyEnv) > 0 {
			b.WriteString(", or ")
		}
		b.WriteString(c.Login + " as the user golem runs as")
		if c.LoginFiles != nil {
			if files := c.LoginFiles(getenv); len(files) > 0 {
				b.WriteString(" (golem looks for " + strings.Join(files, ", ") + ")")
			}
		}
	}
	return "", fmt.Errorf("engine %s: %w: %s", spec.Name, ErrNoCredentials, b.String())
}
