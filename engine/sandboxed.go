package engine

import (
	"encoding/json"
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
	// Private, when set, returns the state folders the CLI working in
	// workdir has one of its own inside the sandbox, and variables that
	// keep its state in them.
	Private func(getenv func(string) string, workdir string) ([]sandbox.Private, []string)
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

// claudePrivate is Claude Code's state: its config folder
// (CLAUDE_CONFIG_DIR, default ~/.claude), one of its own for each working
// directory inside the sandbox. Shared, it let every conversation's agent
// read the others' transcripts (projects/, file-history/, todos/) and
// plant what the next conversation's CLI runs: hooks in settings.json, a
// CLAUDE.md, an MCP server in the global file's projects.
//
// Inside, CLAUDE_CONFIG_DIR is the config folder, where Claude Code keeps
// its global file too, as .claude.json (it replaces that file by a
// rename, which a file bound alone would refuse; $HOME stays read-only).
// The working directory's own folder starts that file as a copy of the
// real one without its projects (the other folders' settings); the real
// folder's settings, instructions, commands, agents, skills, hooks and
// plugins show read-only, and its login and the working directory's
// sessions writable: a refreshed login reaches every conversation, and
// the terminal lists and continues the chat's sessions as its own.
func claudePrivate(getenv func(string) string, workdir string) ([]sandbox.Private, []string) {
	dir, global := getenv("CLAUDE_CONFIG_DIR"), ""
	if dir != "" {
		global = filepath.Join(dir, ".claude.json")
	} else {
		home := getenv("HOME")
		if home == "" {
			return nil, nil
		}
		dir = filepath.Join(home, ".claude")
		global = filepath.Join(home, ".claude.json")
		if _, err := os.Stat(global); err != nil {
			global = filepath.Join(dir, ".claude.json") // where earlier sandboxed runs kept it
		}
	}
	p := sandbox.Private{
		Dir: dir,
		Shared: []string{"settings.json", "CLAUDE.md", "agents", "commands", "skills", "hooks", "output-styles",
			"rules", "plugins", "workflows", "keybindings.json"},
		Through: []sandbox.Through{{Path: ".credentials.json"},
			{Path: filepath.Join("projects", ClaudeProjectName(realDir(workdir))), Dir: true}},
		Seed: func(own *os.Root) error { return seedClaudeGlobal(own, global) },
	}
	return []sandbox.Private{p}, []string{"CLAUDE_CONFIG_DIR=" + dir}
}

// seedClaudeGlobal starts own's .claude.json, where there is none, as a
// copy of the real global file without its projects; none where that
// file is missing or not JSON (the CLI then makes its own).
func seedClaudeGlobal(own *os.Root, global string) error {
	if _, err := own.Lstat(".claude.json"); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	b, err := os.ReadFile(global)
	if err != nil {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	delete(m, "projects")
	if b, err = json.Marshal(m); err != nil {
		return err
	}
	return own.WriteFile(".claude.json", b, 0o600)
}

// codexPrivate is Codex's state: CODEX_HOME (default ~/.codex), one of
// its own for each working directory inside the sandbox, as Claude
// Code's is (see claudePrivate): its databases (threads, memories,
// history) are the working directory's own. The real folder's
// config.toml (a notify command, MCP servers), AGENTS.md, prompts and
// rules show read-only; its login (auth.json) and sessions/ writable,
// where the terminal and golem's /sessions find the chat's sessions.
// sessions/ is one tree by date for every working directory, so an agent
// can still read another's rollouts there (README: what the sandbox does
// not cover yet).
func codexPrivate(getenv func(string) string, _ string) ([]sandbox.Private, []string) {
	dir := getenv("CODEX_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return nil, nil
		}
		dir = filepath.Join(home, ".codex")
	}
	return []sandbox.Private{{
		Dir:     dir,
		Shared:  []string{"config.toml", "AGENTS.md", "AGENTS.override.md", "prompts", "rules"},
		Through: []sandbox.Through{{Path: "auth.json"}, {Path: "sessions", Dir: true}},
	}}, []string{"CODEX_HOME=" + dir}
}

// geminiPrivate is the Gemini CLI's state: ~/.gemini, one of its own for
// each working directory inside the sandbox (see claudePrivate). Its
// settings.json (hooks, MCP servers), GEMINI.md, commands, extensions and
// policies show read-only; its login, its registry of project folders
// (projects.json) and the folders it keeps each project's chats and
// history in (tmp/, history/) writable: the CLI names a new project's
// folder itself, so tmp/ is every working directory's, and an agent can
// still read another's chats there (README: what the sandbox does not
// cover yet).
func geminiPrivate(getenv func(string) string, _ string) ([]sandbox.Private, []string) {
	home := getenv("HOME")
	if home == "" {
		return nil, nil
	}
	return []sandbox.Private{{
		Dir:    filepath.Join(home, ".gemini"),
		Shared: []string{"settings.json", "GEMINI.md", "commands", "extensions", "policies"},
		Through: []sandbox.Through{{Path: "oauth_creds.json"}, {Path: "google_accounts.json"},
			{Path: "tmp", Dir: true}, {Path: "history", Dir: true}},
	}}, nil
}

// openCodeState is OpenCode's state: its folders in the XDG data, cache
// and state homes, writable and shared (its login, and its sessions, which
// it keeps by project: every worktree of one repository is one project);
// and its config folder, the working directory's own inside the sandbox
// with everything the real one holds read-only: its config, agents,
// commands and plugins, which are code OpenCode runs.
func openCodeState(getenv func(string) string) ([]string, []string) {
	var dirs []string
	for env, def := range map[string]string{"XDG_DATA_HOME": ".local/share", "XDG_CACHE_HOME": ".cache", "XDG_STATE_HOME": ".local/state"} {
		if base := xdgHome(getenv, env, def); base != "" {
			dirs = append(dirs, filepath.Join(base, "opencode"))
		}
	}
	return dirs, nil
}

// openCodePrivate is OpenCode's config folder (see openCodeState).
func openCodePrivate(getenv func(string) string, _ string) ([]sandbox.Private, []string) {
	base := xdgHome(getenv, "XDG_CONFIG_HOME", ".config")
	if base == "" {
		return nil, nil
	}
	return []sandbox.Private{{Dir: filepath.Join(base, "opencode"), AllShared: true}}, nil
}

// xdgHome is the XDG base folder env names, else def below HOME; "" for
// neither.
func xdgHome(getenv func(string) string, env, def string) string {
	if base := getenv(env); base != "" {
		return base
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, def)
	}
	return ""
}

// wrap returns cmd's sandboxed form in turn's sandbox.
func (c *cli) wrap(sb *sandbox.Turn, path, workdir string, args, env []string) (*sandbox.Jail, error) {
	spec, _ := Find(c.name)
	getenv := func(name string) string { return lookupEnv(env, name) }
	need := spec.Sandbox
	var state, stateEnv []string
	if need.State != nil {
		state, stateEnv = need.State(getenv)
	}
	var private []sandbox.Private
	if need.Private != nil {
		var more []string
		private, more = need.Private(getenv, workdir)
		stateEnv = append(stateEnv, more...)
	}
	hosts := need.APIHosts
	for _, k := range need.BaseURLEnv {
		if h := urlHost(getenv(k)); h != "" {
			hosts = append([]string{h}, hosts...)
		}
	}
	return sb.Wrap(sandbox.Command{Path: path, Args: args, Env: env, State: state, StateEnv: stateEnv,
		Private: private, APIHosts: hosts})
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
