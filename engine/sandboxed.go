package engine

import (
	"errors"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/golem-chat/golem/sandbox"
)

// SandboxNeeds says what a sandbox must leave an engine's CLI.
type SandboxNeeds struct {
	// State returns the folders the CLI keeps its own state in and
	// writes, and variables the sandboxed CLI gets to keep it there, for
	// the child's environment as getenv reads it.
	State func(getenv func(string) string) (dirs, env []string)
	// BaseURLEnv are the variables that point the CLI at another model
	// API; APIHosts (host:port) are those it calls without them.
	BaseURLEnv []string
	APIHosts   []string
}

// homeDirs returns a State of folders below HOME.
func homeDirs(rel ...string) func(func(string) string) ([]string, []string) {
	return func(getenv func(string) string) ([]string, []string) {
		home := getenv("HOME")
		if home == "" {
			return nil, nil
		}
		dirs := make([]string, len(rel))
		for i, r := range rel {
			dirs[i] = filepath.Join(home, r)
		}
		return dirs, nil
	}
}

// claudeState is Claude Code's state: its config folder (CLAUDE_CONFIG_DIR,
// default ~/.claude). Claude Code replaces its global file ~/.claude.json
// by writing a temporary file beside it and renaming it over: a file bound
// into the sandbox alone cannot be renamed over, and $HOME stays
// read-only. So inside the sandbox CLAUDE_CONFIG_DIR is ~/.claude, where
// Claude Code keeps that file as ~/.claude/.claude.json, in a folder it
// may write; the first sandboxed run starts it as a copy of ~/.claude.json.
func claudeState(getenv func(string) string) ([]string, []string) {
	if dir := getenv("CLAUDE_CONFIG_DIR"); dir != "" {
		return []string{dir}, nil
	}
	home := getenv("HOME")
	if home == "" {
		return nil, nil
	}
	dir := filepath.Join(home, ".claude")
	inside := filepath.Join(dir, ".claude.json")
	if _, err := os.Lstat(inside); errors.Is(err, fs.ErrNotExist) {
		if b, err := os.ReadFile(filepath.Join(home, ".claude.json")); err == nil && os.MkdirAll(dir, 0o700) == nil {
			os.WriteFile(inside, b, 0o600)
		}
	}
	return []string{dir}, []string{"CLAUDE_CONFIG_DIR=" + dir}
}

// xdgDirs is OpenCode's state: its folders in the XDG data, config, cache
// and state homes.
func xdgDirs(name string) func(func(string) string) ([]string, []string) {
	return func(getenv func(string) string) ([]string, []string) {
		home := getenv("HOME")
		var dirs []string
		for env, def := range map[string]string{"XDG_DATA_HOME": ".local/share", "XDG_CONFIG_HOME": ".config",
			"XDG_CACHE_HOME": ".cache", "XDG_STATE_HOME": ".local/state"} {
			base := getenv(env)
			if base == "" {
				if home == "" {
					continue
				}
				base = filepath.Join(home, def)
			}
			dirs = append(dirs, filepath.Join(base, name))
		}
		return dirs, nil
	}
}

// wrap returns cmd's sandboxed form in turn's sandbox.
func (c *cli) wrap(sb *sandbox.Turn, path string, args, env []string) (*sandbox.Jail, error) {
	spec, _ := Find(c.name)
	getenv := func(name string) string { return lookupEnv(env, name) }
	need := spec.Sandbox
	var state, stateEnv []string
	if need.State != nil {
		state, stateEnv = need.State(getenv)
	}
	hosts := need.APIHosts
	for _, k := range need.BaseURLEnv {
		if h := urlHost(getenv(k)); h != "" {
			hosts = append([]string{h}, hosts...)
		}
	}
	return sb.Wrap(sandbox.Command{Path: path, Args: args, Env: env, State: state, StateEnv: stateEnv, APIHosts: hosts})
}

// urlHost returns a base URL's host:port ("" for none).
func urlHost(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// lookupEnv returns the last value of name in env.
func lookupEnv(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}
