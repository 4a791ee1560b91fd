package engine_test

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/anthropictest"
	"github.com/golem-chat/golem/engine/geminitest"
	"github.com/golem-chat/golem/engine/openaitest"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/sandbox"
	"github.com/golem-chat/golem/sandbox/sandboxtest"
)

// TestRealCLIsSandboxed: Codex, the Gemini CLI and OpenCode answer from
// inside golem's sandbox (network: allowlist) against their fake APIs,
// which the proxy lets through as their base URL settings name them;
// OpenCode's base URL is in its own config, which golem does not read, so
// its host is in allow_hosts, as the README tells an operator to do.
func TestRealCLIsSandboxed(t *testing.T) {
	t.Run("codex", func(t *testing.T) {
		t.Parallel()
		c := newRealCodex(t)
		c.home, c.workdir = sandboxtest.Dir(t), sandboxtest.Dir(t)
		sb := sandboxtest.New(t, sandbox.Config{}, sandbox.Options{})
		events := c.run(t, c.newEngine(openaitest.ScenarioText, engine.Config{}), engine.Turn{Prompt: "Say hello.",
			Sandbox: sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: c.workdir})})
		if got := textOf(events); got != openaitest.TextAnswer {
			t.Errorf("answer %q; events: %s", got, realDump(events))
		}
	})
	t.Run("gemini", func(t *testing.T) {
		t.Parallel()
		c := newRealGemini(t)
		c.home, c.workdir = sandboxtest.Dir(t), sandboxtest.Dir(t)
		sb := sandboxtest.New(t, sandbox.Config{}, sandbox.Options{})
		events := c.run(t, c.newEngine(t, geminitest.ScenarioText, engine.Config{}), engine.Turn{Prompt: "Say hello.",
			Mode: engine.ModeBypass, Sandbox: sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: c.workdir})})
		if got := textOf(events); got != geminitest.TextAnswer {
			t.Errorf("answer %q; events: %s", got, realDump(events))
		}
	})
	t.Run("opencode", func(t *testing.T) {
		t.Parallel()
		c := newRealOpenCode(t)
		c.home, c.workdir = sandboxtest.Dir(t), sandboxtest.Dir(t)
		sb := sandboxtest.New(t, sandbox.Config{AllowHosts: []string{strings.TrimPrefix(c.srv.URL, "http://")}}, sandbox.Options{})
		events := c.run(t, c.newEngine(anthropictest.ScenarioText, engine.Config{}), engine.Turn{Prompt: "Say hello.",
			Mode: engine.ModeBypass, Sandbox: sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: c.workdir})})
		if got := textOf(events); got != anthropictest.TextAnswer {
			t.Errorf("answer %q; events: %s", got, realDump(events))
		}
	})
}

// TestRealCLIsSandboxedStateOfTheirOwn: Codex's, the Gemini CLI's and
// OpenCode's config folders are each working directory's own inside the sandbox: the
// operator's instructions reach the agent's shell, a write to the CLI's
// config fails, what the agent leaves in the folder is not in another
// working directory's, and the chat's session is where golem's /sessions
// (and the terminal) find it.
func TestRealCLIsSandboxedStateOfTheirOwn(t *testing.T) {
	type cli struct {
		name, dir, config, instr string
		sessions                 string // the folder below dir it keeps sessions in, "" where it is not its own
		cache                    string // a folder of code it runs besides dir, below HOME, "" for none
		// engine returns the CLI's engine whose model runs command, and
		// the host its API is on where the proxy must be told of it.
		engine func(t *testing.T, home, scenario, command string) (engine.Engine, string)
	}
	for _, c := range []cli{
		{name: "codex", dir: ".codex", config: "config.toml", instr: "AGENTS.md", sessions: "sessions",
			engine: func(t *testing.T, home, scenario, command string) (engine.Engine, string) {
				c := newRealCodex(t)
				c.srv.Handle(scenario, func(r *openaitest.Request) openaitest.Reply {
					if r.Step() == 0 {
						return openaitest.Reply{Items: []openaitest.Output{openaitest.FunctionCall("call_probe", "exec_command", map[string]any{"cmd": command})}}
					}
					var out []string
					for _, o := range r.Outputs() {
						out = append(out, o.OutputText())
					}
					return openaitest.Text("PROBED " + strings.Join(out, " "))
				})
				vars := openaitest.CLIVars(home, c.srv.BaseURL(scenario))
				vars["CODEX_HOME"] = filepath.Join(home, ".codex")
				return engine.NewCodex(engine.Config{Command: c.bin, Env: vars}), ""
			}},
		{name: "gemini", dir: ".gemini", config: "settings.json", instr: "GEMINI.md", sessions: "tmp",
			engine: func(t *testing.T, home, scenario, command string) (engine.Engine, string) {
				c := newRealGemini(t)
				c.srv.Handle(scenario, func(r *geminitest.Request) geminitest.Reply {
					if r.Step() == 0 {
						return geminitest.Call("run_shell_command", map[string]any{"command": command, "description": "Probe"})
					}
					var out []string
					for _, res := range r.Results() {
						out = append(out, res.Output())
					}
					return geminitest.Text("PROBED " + strings.Join(out, " "))
				})
				return engine.NewGemini(engine.Config{Command: c.bin, Env: geminitest.CLIVars(t, home, c.srv.BaseURL(scenario))}), ""
			}},
		{name: "opencode", dir: ".config/opencode", config: "opencode.json", instr: "AGENTS.md", cache: ".cache/opencode",
			engine: openCodeProbe},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			home := sandboxtest.Dir(t)
			state := filepath.Join(home, c.dir)
			os.MkdirAll(state, 0o755)
			os.WriteFile(filepath.Join(state, c.instr), []byte("OPERATOR-INSTRUCTIONS"), 0o644)
			mine, theirs := sandboxtest.Dir(t), sandboxtest.Dir(t)
			first := fmt.Sprintf(`cat %[1]s/%[2]s; echo; echo x >> %[1]s/%[3]s || echo config-readonly; echo PLANTED > %[1]s/planted.txt`, state, c.instr, c.config)
			second := fmt.Sprintf("cat %s/planted.txt 2>&1 || echo not-there", state)
			if c.cache != "" {
				cache := filepath.Join(home, c.cache)
				writeFiles(t, map[string]string{filepath.Join(cache, "bin", "tool"): "CACHED-TOOL"})
				first += fmt.Sprintf("; cat %[1]s/bin/tool; echo; echo x >> %[1]s/bin/tool || echo cache-readonly; echo PLANTED > %[1]s/planted.txt", cache)
				second += fmt.Sprintf("; cat %s/planted.txt 2>&1 || echo not-there", cache)
			}
			if c.sessions != "" {
				second += fmt.Sprintf("; find %s/%s -type f", state, c.sessions)
			}
			e, host := c.engine(t, home, c.name+"-mine", first)
			e2, host2 := c.engine(t, home, c.name+"-theirs", second)
			if _, err := os.Stat(filepath.Join(state, c.config)); err != nil && strings.HasSuffix(c.config, ".json") {
				os.WriteFile(filepath.Join(state, c.config), []byte("{}"), 0o644)
			} else if err != nil {
				os.WriteFile(filepath.Join(state, c.config), nil, 0o644)
			}
			config, _ := os.ReadFile(filepath.Join(state, c.config))
			var allow []string
			for _, h := range []string{host, host2} {
				if h != "" {
					allow = append(allow, h)
				}
			}
			sb := sandboxtest.New(t, sandbox.Config{AllowHosts: allow}, sandbox.Options{})
			events := realRun(t, e, engine.Turn{Prompt: "Probe.", Workdir: mine, Mode: engine.ModeBypass,
				Sandbox: sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: mine})})
			got := textOf(events)
			if !strings.Contains(got, "OPERATOR-INSTRUCTIONS") || !strings.Contains(got, "config-readonly") {
				t.Errorf("the first probe: %q; want the operator's instructions and a read-only config; events: %s", got, realDump(events))
			}
			if b, _ := os.ReadFile(filepath.Join(state, c.config)); string(b) != string(config) {
				t.Errorf("the operator's %s holds %q, was %q", c.config, b, config)
			}
			if _, err := os.Lstat(filepath.Join(state, "planted.txt")); err == nil {
				t.Error("what the agent made landed in the operator's state folder")
			}
			if c.cache != "" {
				cache := filepath.Join(home, c.cache)
				if !strings.Contains(got, "CACHED-TOOL") || !strings.Contains(got, "cache-readonly") {
					t.Errorf("the first probe: %q; want the cache's tool, read-only", got)
				}
				if b, _ := os.ReadFile(filepath.Join(cache, "bin", "tool")); string(b) != "CACHED-TOOL" {
					t.Errorf("the cache's tool holds %q", b)
				}
				if _, err := os.Lstat(filepath.Join(cache, "planted.txt")); err == nil {
					t.Error("what the agent made landed in the real cache")
				}
			}
			done := events[len(events)-1]
			listed := func() {
				t.Helper()
				if l, ok := e.(engine.SessionLister); !ok {
					t.Errorf("%s lists no sessions", c.name)
				} else if s, err := l.Sessions(mine, 1); err != nil || len(s) != 1 || s[0].ID != done.SessionID {
					t.Errorf("golem's sessions of the working directory: %+v, %v; want %s", s, err, done.SessionID)
				}
			}
			listed()
			events = realRun(t, e, engine.Turn{Prompt: "Probe again.", Workdir: mine, SessionID: done.SessionID, Mode: engine.ModeBypass,
				Sandbox: sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: mine})})
			if again := events[len(events)-1]; again.Type != parser.Done || again.SessionID != done.SessionID {
				t.Errorf("the next turn ended with %+v, want session %s resumed; events: %s", again, done.SessionID, realDump(events))
			}
			listed()

			events = realRun(t, e2, engine.Turn{Prompt: "Probe.", Workdir: theirs,
				Mode: engine.ModeBypass, Sandbox: sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: theirs})})
			if got := textOf(events); !strings.Contains(got, "not-there") || strings.Contains(got, "PLANTED") || strings.Contains(got, done.SessionID) || strings.Contains(got, done.SessionID[:8]+".jsonl") {
				t.Errorf("another working directory's probe: %q; want no file and no session of the first one's; events: %s", got, realDump(events))
			}
		})
	}
}

// TestOpenCodeRealSandboxedDataOfItsOwn: what OpenCode's data folder
// keeps of the files it worked on (snapshot: a git repository of each
// worktree, untracked files too; tool-output, plans, ...) and its state
// folder (the prompts typed in its terminal UI) are each working
// directory's own inside the sandbox, with the REAL OpenCode: another
// working directory's agent sees neither the operator's nor the first
// one's, the operator's stay as they were, and a symlink in the shared
// data folder where one goes leads golem nowhere.
func TestOpenCodeRealSandboxedDataOfItsOwn(t *testing.T) {
	home, stateDir := sandboxtest.Dir(t), sandboxtest.Dir(t)
	data := filepath.Join(home, ".local", "share", "opencode")
	stateHome := filepath.Join(home, ".local", "state", "opencode")
	elsewhere := filepath.Join(home, "elsewhere")
	writeFiles(t, map[string]string{
		filepath.Join(data, "snapshot", "operator-project", "marker"): "OPERATOR-SNAPSHOT",
		filepath.Join(data, "tool-output", "tool_1"):                  "OPERATOR-TOOL-OUTPUT",
		filepath.Join(stateHome, "prompt-history.jsonl"):              `{"input":"OPERATOR-PROMPT"}`,
	})
	// A broken link an agent left, and a link to a folder (an
	// operator's, to another disk, or an agent's to another worktree):
	// both are replaced.
	if err := os.Symlink(filepath.Join(elsewhere, "plans"), filepath.Join(data, "plans")); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(home, "disk", "opencode-logs")
	writeFiles(t, map[string]string{filepath.Join(logs, "operator.log"): "OPERATOR-LOG"})
	if err := os.Symlink(logs, filepath.Join(data, "log")); err != nil {
		t.Fatal(err)
	}
	// Two worktrees of one repository, as golem makes them: OpenCode
	// counts them one project.
	repo := sandboxtest.Dir(t)
	mine, theirs := filepath.Join(repo, "wt", "mine"), filepath.Join(repo, "wt", "theirs")
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.email=g@example.com", "-c", "user.name=g", "commit", "-q", "--allow-empty", "-m", "start"},
		{"worktree", "add", "-q", mine}, {"worktree", "add", "-q", theirs}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	writeFiles(t, map[string]string{filepath.Join(mine, "secret.txt"): "MINE-SECRET"})
	e, host := openCodeProbe(t, home, "data-mine", "echo mine")
	look := fmt.Sprintf("cat %[1]s/snapshot/operator-project/marker %[1]s/tool-output/tool_1 %[1]s/log/operator.log %[2]s/prompt-history.jsonl 2>&1; echo SEEN $(find %[1]s/snapshot %[1]s/tool-output %[1]s/plans -mindepth 2 -maxdepth 2)", data, stateHome)
	e2, host2 := openCodeProbe(t, home, "data-theirs", look)
	sb := sandboxtest.New(t, sandbox.Config{AllowHosts: []string{host, host2}}, sandbox.Options{StateDir: stateDir})
	events := realRun(t, e, engine.Turn{Prompt: "Probe.", Workdir: mine, Mode: engine.ModeBypass,
		Sandbox: sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: mine})})
	if got := textOf(events); !strings.Contains(got, "PROBED mine") {
		t.Fatalf("the first probe: %q; events: %s", got, realDump(events))
	}
	// Its snapshot went to its own folder, not the operator's.
	var own []string
	filepath.WalkDir(stateDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(p, "-snapshot/") {
			own = append(own, p)
		}
		return nil
	})
	if len(own) == 0 {
		t.Fatalf("no snapshot of the first working directory in its own state (%s)", stateDir)
	}
	// .../<dir>-snapshot/<project>/<worktree>/...: the first worktree's
	// snapshot repository, as OpenCode names it.
	rest := own[0][strings.Index(own[0], "-snapshot/")+len("-snapshot/"):]
	mineSnap := strings.Join(strings.SplitN(rest, "/", 3)[:2], "/")
	t.Logf("the first worktree's snapshot: %s", mineSnap)
	if entries, _ := os.ReadDir(filepath.Join(data, "snapshot")); len(entries) != 1 || entries[0].Name() != "operator-project" {
		t.Errorf("the operator's snapshot folder holds %v, want operator-project alone", entries)
	}
	if _, err := os.Lstat(elsewhere); err == nil {
		t.Error("golem made a folder where the symlink in the data folder led")
	}
	if fi, err := os.Lstat(filepath.Join(data, "plans")); err != nil || !fi.IsDir() {
		t.Errorf("the plans folder: %v, %v; want the broken symlink replaced by a folder", fi, err)
	}
	if fi, err := os.Lstat(filepath.Join(data, "log")); err != nil || !fi.IsDir() {
		t.Errorf("the log folder: %v, %v; want the symlink replaced by a folder", fi, err)
	}
	if entries, _ := os.ReadDir(logs); len(entries) != 1 {
		t.Errorf("the folder the log link led to holds %v, want operator.log alone", entries)
	}

	events = realRun(t, e2, engine.Turn{Prompt: "Probe.", Workdir: theirs, Mode: engine.ModeBypass,
		Sandbox: sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: theirs})})
	got := textOf(events)
	_, seen, ok := strings.Cut(got, "SEEN")
	if !ok || strings.Contains(seen, mineSnap) || strings.Contains(seen, "operator-project") || strings.Contains(got, "OPERATOR-") {
		t.Errorf("another working directory's probe: %q; want no snapshot or tool output of the operator's or the first one's; events: %s", got, realDump(events))
	}
	for name, want := range map[string]string{"share/opencode/snapshot/operator-project/marker": "OPERATOR-SNAPSHOT",
		"share/opencode/tool-output/tool_1": "OPERATOR-TOOL-OUTPUT", "state/opencode/prompt-history.jsonl": `{"input":"OPERATOR-PROMPT"}`} {
		if b, _ := os.ReadFile(filepath.Join(home, ".local", name)); string(b) != want {
			t.Errorf("the operator's %s holds %q", name, b)
		}
	}
}

// openCodeProbe returns the real OpenCode in home, whose model runs
// command in its bash tool, then answers "PROBED " and what it printed;
// and the host of its fake API, for allow_hosts (its base URL is in its
// own config, which golem does not read).
func openCodeProbe(t *testing.T, home, scenario, command string) (engine.Engine, string) {
	c := newRealOpenCode(t)
	c.srv.Handle(scenario, func(r *anthropictest.Request) anthropictest.Reply {
		if r.Step() == 0 {
			return anthropictest.Reply{Blocks: []anthropictest.Block{
				anthropictest.ToolUse("toolu_probe", "bash", map[string]string{"command": command, "description": "Probe"})}}
		}
		var out []string
		for _, res := range r.ToolResults() {
			out = append(out, res.ResultText())
		}
		return anthropictest.Text("PROBED " + strings.Join(out, " "))
	})
	return engine.NewOpenCode(engine.Config{Command: c.bin, Env: anthropictest.OpenCodeVars(home, c.srv.BaseURL(scenario))}),
		strings.TrimPrefix(c.srv.URL, "http://")
}
