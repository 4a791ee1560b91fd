package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode"

	"github.com/golem-chat/golem/sandbox"
)

// SandboxNeeds says what a sandbox must leave an engine's CLI.
type SandboxNeeds struct {
	// State returns the folders the CLI keeps its own state in and
	// writes, and variables the sandboxed CLI gets to keep it there, for
	// the child's environment as getenv reads it.
	State func(getenv func(string) string) (dirs, env []string)
	// Private, when set, returns the state folders the CLI running turn t
	// has one of its own of inside the sandbox (for t's working
	// directory), and variables that keep its state in them.
	Private func(getenv func(string) string, t Turn) ([]sandbox.Private, []string)
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
func claudePrivate(getenv func(string) string, t Turn) ([]sandbox.Private, []string) {
	dir := claudeDir(getenv)
	if dir == "" {
		return nil, nil
	}
	global := filepath.Join(dir, ".claude.json")
	if getenv("CLAUDE_CONFIG_DIR") == "" {
		// The CLI's own place for it, else where earlier sandboxed runs
		// kept it.
		home := filepath.Join(getenv("HOME"), ".claude.json")
		if _, err := os.Stat(home); err == nil {
			global = home
		}
	}
	p := sandbox.Private{
		Dir: dir,
		Shared: []string{"settings.json", "CLAUDE.md", "agents", "commands", "skills", "hooks", "output-styles",
			"rules", "plugins", "workflows", "keybindings.json"},
		Through: []sandbox.Through{{Path: ".credentials.json"},
			{Path: filepath.Join("projects", ClaudeProjectName(realDir(t.Workdir))), Dir: true}},
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
// history) and sessions/ are the working directory's own. The real
// folder's config.toml (a notify command, MCP servers), AGENTS.md,
// prompts and rules show read-only, and its login (auth.json) writable.
//
// Codex keeps every working directory's sessions in one tree by date, so
// the real sessions/ cannot be shown: the rollout of the session the turn
// resumes is, writable, and the sessions the CLI starts are handed on to
// the real tree once the sandbox ends (handOnRollouts), where the terminal
// and golem's /sessions find them.
func codexPrivate(getenv func(string) string, t Turn) ([]sandbox.Private, []string) {
	dir := codexDir(getenv)
	if dir == "" {
		return nil, nil
	}
	workdir := realDir(t.Workdir)
	p := sandbox.Private{
		Dir:     dir,
		Shared:  []string{"config.toml", "AGENTS.md", "AGENTS.override.md", "prompts", "rules"},
		Through: []sandbox.Through{{Path: "auth.json"}},
	}
	var resumed []string
	if t.SessionID != "" {
		files, cwds := codexRollouts(dir, t.SessionID)
		root, err := filepath.EvalSymlinks(filepath.Join(dir, "sessions"))
		for i, f := range files {
			if rel, relErr := filepath.Rel(root, f.path); err == nil && relErr == nil && f.id == t.SessionID && cwds[i] == workdir {
				p.Through = append(p.Through, sandbox.Through{Path: filepath.Join("sessions", rel)})
				resumed = append(resumed, filepath.Join("sessions", rel))
			}
		}
	}
	p.After = func(own *os.Root) { handOnRollouts(own, dir, workdir, resumed) }
	return []sandbox.Private{p}, []string{"CODEX_HOME=" + dir}
}

// handOnRollouts moves the rollouts Codex started in own's sessions/
// (those that record workdir) to the same place below dir, and removes
// the empty files bound rollouts were mounted on. One that cannot move
// stays, and is still found inside for the next turn.
func handOnRollouts(own *os.Root, dir, workdir string, resumed []string) {
	var moved []string
	fs.WalkDir(own.FS(), "sessions", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || !strings.HasPrefix(d.Name(), "rollout-") {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.Size() == 0 {
			own.Remove(p)
			return nil
		}
		if rolloutCwd(own, p) != workdir {
			return nil // not this folder's: the agent wrote it
		}
		if err := copyOut(own, p, filepath.Join(dir, p)); err == nil {
			moved = append(moved, p)
		}
		return nil
	})
	for _, p := range moved {
		own.Remove(p)
	}
	// A resumed rollout is the real file, bound writable: one the agent
	// turned to record another working directory would be listed there,
	// and bound into its sandbox when resumed. It leaves the listing.
	for _, p := range resumed {
		path := filepath.Join(dir, p)
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		cwd := headCwd(f)
		f.Close()
		if cwd != workdir {
			os.Rename(path, path+".golem-rejected")
		}
	}
}

// headCwd is the working directory the rollout read from r records in
// its first line, "" for none.
func headCwd(r io.Reader) string {
	first, _ := headLine(r)
	_, _, cwd := codexLine(first)
	return cwd
}

// rolloutCwd is the working directory the rollout at p in own records.
func rolloutCwd(own *os.Root, p string) string {
	f, err := own.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	return headCwd(f)
}

// copyOut copies p in own to dst, a new file.
func copyOut(own *os.Root, p, dst string) error {
	src, err := own.Open(p)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err = io.Copy(out, src); err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
	}
	return err
}

// geminiPrivate is the Gemini CLI's state: ~/.gemini, one of its own for
// each working directory inside the sandbox (see claudePrivate). Its
// settings.json (hooks, MCP servers), GEMINI.md, commands, extensions and
// policies show read-only; its login, and the working directory's own
// project folders in tmp/ (its chats) and history/, writable, where the
// terminal and golem's /sessions find them. Its registry of project
// folders (projects.json) is the working directory's own: the CLI renames
// a new one over it (which a bound file refuses), and finds a folder by
// the .project_root marker in it anyway (see geminiProject).
func geminiPrivate(getenv func(string) string, t Turn) ([]sandbox.Private, []string) {
	home := getenv("HOME")
	if home == "" {
		return nil, nil
	}
	dir := filepath.Join(home, ".gemini")
	p := sandbox.Private{
		Dir:     dir,
		Shared:  []string{"settings.json", "GEMINI.md", "commands", "extensions", "policies"},
		Through: []sandbox.Through{{Path: "oauth_creds.json"}, {Path: "google_accounts.json"}},
	}
	if name, err := geminiProject(dir, realDir(t.Workdir)); err == nil {
		p.Through = append(p.Through, sandbox.Through{Path: filepath.Join("tmp", name), Dir: true},
			sandbox.Through{Path: filepath.Join("history", name), Dir: true})
	}
	return []sandbox.Private{p}, nil
}

// geminiProject returns the name of workdir's project folders in
// ~/.gemini's tmp/ and history/, with their .project_root markers made:
// the folder the CLI (or the terminal) already keeps for it, else one
// named by golem (geminiName), which the CLI finds by its marker.
func geminiProject(dir, workdir string) (string, error) {
	name := geminiName(workdir)
	if _, err := os.Lstat(filepath.Join(dir, "tmp", name)); err != nil {
		if theirs := geminiFolderOf(dir, workdir); theirs != "" {
			return theirs, nil
		}
	}
	for _, base := range []string{"tmp", "history"} {
		root, err := openRootMade(filepath.Join(dir, base))
		if err != nil {
			return "", err
		}
		// The agent writes this folder: the marker is golem's word again
		// each turn, and a symlink it left is not followed.
		err = root.MkdirAll(name, 0o700)
		if err == nil {
			err = writeMarker(root, filepath.Join(name, ".project_root"), workdir)
		}
		root.Close()
		if err != nil {
			return "", err
		}
	}
	return name, nil
}

// writeMarker makes p in root a regular file holding body, whatever the
// agent left there: a new file renamed over it, so that a symlink at p
// (within root, which os.Root would follow: to another project's marker
// or chat) is replaced, not written through, and one at the new file's
// name fails the exclusive create rather than being followed.
func writeMarker(root *os.Root, p, body string) error {
	tmp := p + ".golem"
	root.RemoveAll(tmp)
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if err = root.Rename(tmp, p); err != nil {
			// A folder in the way: the agent's, and golem's place.
			if root.RemoveAll(p) == nil {
				err = root.Rename(tmp, p)
			}
		}
	}
	if err != nil {
		root.Remove(tmp)
	}
	return err
}

// geminiName is the project folder golem names for workdir: "golem-",
// its last element (letters and digits, at most 32) and a hash of the
// whole path, so that two working directories never share one.
func geminiName(workdir string) string {
	base := strings.Map(func(r rune) rune {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return unicode.ToLower(r)
		}
		return '-'
	}, filepath.Base(workdir))
	if len(base) > 32 {
		base = base[:32]
	}
	sum := sha256.Sum256([]byte(workdir))
	return "golem-" + base + "-" + hex.EncodeToString(sum[:6])
}

// geminiFolderOf returns the folder in ~/.gemini's tmp/ that the CLI made
// for workdir before golem named one, "" for none: the one its real
// projects.json names (which no agent writes), if its .project_root
// marker agrees. A marker alone is no proof: the agent of that folder's
// own working directory writes it.
func geminiFolderOf(dir, workdir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "projects.json"))
	if err != nil {
		return ""
	}
	var reg struct {
		Projects map[string]string `json:"projects"`
	}
	if json.Unmarshal(b, &reg) != nil {
		return ""
	}
	name := reg.Projects[workdir]
	if name == "" || name != filepath.Base(name) || strings.HasPrefix(name, ".") {
		return ""
	}
	marker, err := os.ReadFile(filepath.Join(dir, "tmp", name, ".project_root"))
	if err != nil || strings.TrimSpace(string(marker)) != workdir {
		return ""
	}
	return name
}

// openRootMade opens dir as an os.Root, made where missing.
func openRootMade(dir string) (*os.Root, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return os.OpenRoot(dir)
}

// openCodeState is OpenCode's state: its data folder, writable and
// shared (its login, and its sessions, which it keeps in one database
// for every project), but for what it holds of the files OpenCode worked
// on (openCodeOwnData); its state folder, the working directory's own but
// for its locks, which every OpenCode on the machine must see; and its
// config and cache folders, the working directory's own inside the
// sandbox with everything the real ones hold read-only: both hold code
// OpenCode runs (plugins, agents and commands; the npm packages it
// installs for them, the binaries it downloads, skills). See
// openCodePrivate.
func openCodeState(getenv func(string) string) ([]string, []string) {
	if base := envDir(getenv, "XDG_DATA_HOME", ".local/share"); base != "" {
		return []string{filepath.Join(base, "opencode")}, nil
	}
	return nil, nil
}

// openCodeOwnData are the folders of OpenCode's data folder that hold the
// files of the folders it works in, each working directory's own inside
// the sandbox (OpenCode 1.18.33): snapshot keeps a git repository of each
// worktree it ran in, with every file in it, untracked ones too, after
// each step; tool-output the whole output of a tool that was cut short;
// plans, storage and worktree what its plan mode, its older releases and
// its own worktrees wrote; log its logs; repos the clones of the git
// repositories its config names as references, which it fetches and
// resets with git at each start. Shared, one conversation's agent read
// every other's worktree there, and could leave a reference's clone a
// git config (core.fsmonitor) that the next OpenCode ran, the terminal's
// among them, outside any sandbox.
var openCodeOwnData = []string{"snapshot", "tool-output", "plans", "storage", "worktree", "log", "repos"}

// openCodePrivate is OpenCode's config, cache and state folders and the
// folders of openCodeOwnData (see openCodeState). Its state folder holds
// the prompts typed in its terminal UI (prompt-history.jsonl,
// prompt-stash.jsonl), the files opened most (frecency.jsonl), the models
// and sessions used last: nothing a run needs. A state folder that is
// the data folder too (XDG_STATE_HOME and XDG_DATA_HOME one folder)
// stays the shared data folder: a Private over it would be the sandbox's
// whole data folder, its database and login the working directory's own.
func openCodePrivate(getenv func(string) string, _ Turn) ([]sandbox.Private, []string) {
	var out []sandbox.Private
	for env, def := range map[string]string{"XDG_CONFIG_HOME": ".config", "XDG_CACHE_HOME": ".cache"} {
		if base := envDir(getenv, env, def); base != "" {
			out = append(out, sandbox.Private{Dir: filepath.Join(base, "opencode"), AllShared: true})
		}
	}
	data, _ := openCodeState(getenv)
	if base := envDir(getenv, "XDG_STATE_HOME", ".local/state"); base != "" && !slices.Contains(data, filepath.Join(base, "opencode")) {
		out = append(out, sandbox.Private{Dir: filepath.Join(base, "opencode"), Through: []sandbox.Through{{Path: "locks", Dir: true}}})
	}
	if base := envDir(getenv, "XDG_DATA_HOME", ".local/share"); base != "" {
		for _, name := range openCodeOwnData {
			out = append(out, sandbox.Private{Dir: filepath.Join(base, "opencode", name)})
		}
	}
	return out, nil
}

// envDir is the folder env names in the environment getenv reads, else
// def below HOME (an XDG base folder, a CLI's own folder); "" for
// neither.
func envDir(getenv func(string) string, env, def string) string {
	if base := getenv(env); env != "" && base != "" {
		return base
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, def)
	}
	return ""
}

// wrap returns cmd's sandboxed form in turn's sandbox.
func (c *cli) wrap(t Turn, path string, args, env []string) (*sandbox.Jail, error) {
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
		private, more = need.Private(getenv, t)
		stateEnv = append(stateEnv, more...)
	}
	hosts := need.APIHosts
	for _, k := range need.BaseURLEnv {
		if h := urlHost(getenv(k)); h != "" {
			hosts = append([]string{h}, hosts...)
		}
	}
	return t.Sandbox.Wrap(sandbox.Command{Path: path, Args: args, Env: env, State: state, StateEnv: stateEnv,
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
