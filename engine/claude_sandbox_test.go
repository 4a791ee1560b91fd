package engine_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/anthropictest"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/sandbox"
	"github.com/golem-chat/golem/sandbox/sandboxtest"
)

// The real Claude Code CLI in golem's sandbox, against the fake Messages
// API: its model asks for two Bash tool uses, a probe and a write outside
// the working directory, then answers.

const (
	probeMark   = "=== "
	sandboxDone = "Probed the sandbox."
)

// probeScript is what the fake model's first Bash runs: each section
// starts with a mark line.
func probeScript(f hostFixture, extra string) string {
	return strings.Join([]string{
		"echo '" + probeMark + "store'; cat " + f.store + "/golem.db " + f.home + "/.ssh/id_ed25519 2>&1",
		"echo '" + probeMark + "env'; env",
		"echo '" + probeMark + "refused'; curl -sS -m 20 " + f.refused.URL + " 2>&1",
		"echo '" + probeMark + "allowed'; curl -sS -m 20 " + f.allowed.URL + " 2>&1",
		"echo '" + probeMark + "mine'; echo mine > made-by-agent.txt && cat made-by-agent.txt",
		extra,
		"true",
	}, "\n")
}

// sections splits a probe's output at its marks.
func sections(out string) map[string]string {
	m := map[string]string{}
	for _, part := range strings.Split(out, probeMark)[1:] {
		name, body, _ := strings.Cut(part, "\n")
		m[name] = body
	}
	return m
}

// sandboxScenario is the fake model's scenario: probe, write outside, answer.
func sandboxScenario(probe, outside string) anthropictest.Responder {
	return func(r *anthropictest.Request) anthropictest.Reply {
		if r.Step() == 0 {
			return anthropictest.Reply{Blocks: []anthropictest.Block{
				anthropictest.ToolUse("toolu_probe", "Bash", map[string]string{"command": probe, "description": "Probe"}),
				anthropictest.ToolUse("toolu_outside", "Bash", map[string]string{"command": "echo x > " + outside, "description": "Write outside"}),
			}}
		}
		return anthropictest.Text(sandboxDone)
	}
}

// realSandboxRun runs the scenario through the engine in turn's sandbox
// and returns the events and the tool results the CLI sent back by id.
func realSandboxRun(t *testing.T, c *realClaude, f hostFixture, sb *sandbox.Turn, workdir, extra string) ([]parser.Event, map[string]anthropictest.ContentBlock) {
	t.Helper()
	c.srv.Handle("sandbox", sandboxScenario(probeScript(f, extra), filepath.Join(f.outside, "file")))
	e := c.newEngine("sandbox", engine.Config{})
	events := c.run(t, e, engine.Turn{Prompt: "Probe the sandbox.", Workdir: workdir, Mode: engine.ModeBypass, Sandbox: sb})
	results := map[string]anthropictest.ContentBlock{}
	for _, req := range c.srv.MessageRequests("sandbox") {
		for _, res := range req.ToolResults() {
			results[res.ToolUseID] = res
		}
	}
	return events, results
}

// checkProbe checks what every sandboxed probe must show: no store, no
// key, no token, a workspace it writes, and a failed write outside.
func checkProbe(t *testing.T, f hostFixture, workdir string, results map[string]anthropictest.ContentBlock) map[string]string {
	t.Helper()
	probe, outside := results["toolu_probe"], results["toolu_outside"]
	s := sections(probe.ResultText())
	if len(s) < 5 {
		t.Fatalf("the probe's output: %q", probe.ResultText())
	}
	if strings.Contains(s["store"], "secret") || strings.Contains(s["store"], "PRIVATE") {
		t.Errorf("cat of the store and the SSH key printed %q", s["store"])
	}
	// GOLEM_CLAUDE_BIN and GOLEM_REQUIRE_TOOLS are in the test's own
	// environment under make test; nothing of it outside the allowlist
	// may reach the agent.
	if strings.Contains(s["env"], "xoxb-") || strings.Contains(s["env"], "GOLEM_") || !strings.Contains(s["env"], "HOME="+f.home) {
		t.Errorf("env printed %q", s["env"])
	}
	if strings.TrimSpace(s["mine"]) != "mine" {
		t.Errorf("a write in the working directory: %q", s["mine"])
	}
	if b, err := os.ReadFile(filepath.Join(workdir, "made-by-agent.txt")); err != nil || string(b) != "mine\n" {
		t.Errorf("the file the agent made: %q, %v", b, err)
	}
	if !outside.IsError || !strings.Contains(outside.ResultText(), "Read-only file system") {
		t.Errorf("the write outside: error %v, %q; want a failed tool saying the file system is read-only", outside.IsError, outside.ResultText())
	}
	if b, _ := os.ReadFile(filepath.Join(f.outside, "file")); string(b) != "outside" {
		t.Errorf("the file outside holds %q", b)
	}
	return s
}

// TestClaudeRealSandboxAllowlist: isolation shared, network allowlist. The
// model API (the fake, on the host's 127.0.0.1) is reached through golem's
// proxy; an allowed host answers; a refused one gets the proxy's 403
// naming sandbox.allow_hosts.
func TestClaudeRealSandboxAllowlist(t *testing.T) {
	t.Parallel()
	f := newHostFixture(t)
	c := newRealClaude(t)
	c.home = f.home
	state := filepath.Join(f.store, "agent-state")
	sb := sandboxtest.New(t, sandbox.Config{AllowHosts: []string{hostOf(f.allowed)}}, sandbox.Options{Hide: []string{f.store}, StateDir: state})
	events, results := realSandboxRun(t, c, f, sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: f.work}), f.work, "")
	if got := textOf(events); !strings.Contains(got, sandboxDone) {
		t.Fatalf("answer %q; events: %s", got, realDump(events))
	}
	s := checkProbe(t, f, f.work, results)
	if !strings.Contains(s["refused"], "sandbox.allow_hosts") || strings.Contains(s["refused"], "hello") {
		t.Errorf("curl of a refused host printed %q", s["refused"])
	}
	if strings.TrimSpace(s["allowed"]) != "hello from the allowed host" {
		t.Errorf("curl of an allowed host printed %q", s["allowed"])
	}
	// Claude Code's state: written in ~/.claude, the session file among it.
	if m, _ := filepath.Glob(filepath.Join(f.home, ".claude", "projects", "*", "*.jsonl")); len(m) == 0 {
		t.Errorf("no session file in %s/.claude/projects", f.home)
	}
	if m, _ := filepath.Glob(filepath.Join(state, "*", "*-claude", ".claude.json")); len(m) != 1 {
		t.Errorf("Claude Code's global file was not written in the working directory's own state folder: %v", m)
	}
}

// TestClaudeRealSandboxOpen: network open: the model API and a host that
// allow_hosts names answer, while another host on this machine's loopback
// (where golem's HTTP API listens) gets the proxy's 403; the files stay as
// closed as ever.
func TestClaudeRealSandboxOpen(t *testing.T) {
	t.Parallel()
	f := newHostFixture(t)
	c := newRealClaude(t)
	c.home = f.home
	sb := sandboxtest.New(t, sandbox.Config{Network: sandbox.Open, AllowHosts: []string{hostOf(f.allowed)}}, sandbox.Options{Hide: []string{f.store}})
	events, results := realSandboxRun(t, c, f, sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: f.work}), f.work, "")
	if got := textOf(events); !strings.Contains(got, sandboxDone) {
		t.Fatalf("answer %q; events: %s", got, realDump(events))
	}
	s := checkProbe(t, f, f.work, results)
	if !strings.Contains(s["refused"], "this machine") || strings.Contains(s["refused"], "hello") {
		t.Errorf("with network open, curl of this machine's loopback printed %q", s["refused"])
	}
	if strings.TrimSpace(s["allowed"]) != "hello from the allowed host" {
		t.Errorf("with network open, curl of an allowed host printed %q", s["allowed"])
	}
}

// TestClaudeRealSandboxNone: network none: the CLI cannot reach even its
// model API, and the run ends with an error; no request reached the fake.
func TestClaudeRealSandboxNone(t *testing.T) {
	t.Parallel()
	f := newHostFixture(t)
	c := newRealClaude(t)
	c.home = f.home
	sb := sandboxtest.New(t, sandbox.Config{Network: sandbox.None}, sandbox.Options{Hide: []string{f.store}})
	events, _ := realSandboxRun(t, c, f, sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: f.work}), f.work, "")
	if last := events[len(events)-1]; last.Type != parser.Error {
		t.Errorf("with network none the run ended with %+v", last)
	}
	if n := len(c.srv.MessageRequests("sandbox")); n != 0 {
		t.Errorf("the fake model API got %d requests through network none", n)
	}
}

// TestClaudeRealSandboxWorktree: isolation worktree (allowlist): the agent
// commits on its branch; the main checkout, another branch and another
// conversation's worktree stay out of its reach.
func TestClaudeRealSandboxWorktree(t *testing.T) {
	t.Parallel()
	f := newHostFixture(t)
	c := newRealClaude(t)
	c.home = f.home
	gitIn := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	gitIn(f.work, "init", "-q", "-b", "main")
	gitIn(f.work, "add", "README")
	gitIn(f.work, "commit", "-q", "-m", "first")
	root := filepath.Join(f.store, "worktrees", "repo")
	mine, theirs := filepath.Join(root, "mine"), filepath.Join(root, "theirs")
	gitIn(f.work, "worktree", "add", "-q", "-b", "golem/mine", mine)
	gitIn(f.work, "worktree", "add", "-q", "-b", "golem/theirs", theirs)
	os.WriteFile(filepath.Join(theirs, "theirs.txt"), []byte("their secret work"), 0o644)
	before := gitIn(f.work, "rev-parse", "golem/theirs")

	sb := sandboxtest.New(t, sandbox.Config{AllowHosts: []string{hostOf(f.allowed)}}, sandbox.Options{Hide: []string{f.store}})
	extra := strings.Join([]string{
		"echo '" + probeMark + "commit'; git add made-by-agent.txt && git -c user.name=agent -c user.email=a@a commit -q -m 'by the agent' && echo committed",
		"echo '" + probeMark + "theirs'; cat " + theirs + "/theirs.txt 2>&1; git update-ref refs/heads/golem/theirs HEAD 2>&1; echo x >> " + f.work + "/README 2>&1",
	}, "\n")
	events, results := realSandboxRun(t, c, f, sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: mine, Tree: mine, Repo: f.work, Branch: "golem/mine"}), mine, extra)
	if got := textOf(events); !strings.Contains(got, sandboxDone) {
		t.Fatalf("answer %q; events: %s", got, realDump(events))
	}
	s := checkProbe(t, f, mine, results)
	if strings.TrimSpace(s["commit"]) != "committed" {
		t.Errorf("the commit: %q", s["commit"])
	}
	if strings.Contains(s["theirs"], "their secret work") {
		t.Errorf("the agent read another conversation's worktree: %q", s["theirs"])
	}
	if got := gitIn(f.work, "log", "-1", "--format=%s", "golem/mine"); got != "by the agent" {
		t.Errorf("golem/mine's last commit: %q", got)
	}
	if got := gitIn(f.work, "rev-parse", "golem/theirs"); got != before {
		t.Error("the agent moved another conversation's branch")
	}
	if b, _ := os.ReadFile(filepath.Join(f.work, "README")); string(b) != "work" {
		t.Errorf("the main checkout's README holds %q", b)
	}
}

// TestClaudeRealSandboxStateOfItsOwn: each working directory's Claude Code
// has a config folder of its own inside the sandbox. The operator's
// settings and CLAUDE.md reach the CLI and cannot be changed; another
// working directory's transcripts and todos, and the other folders'
// entries in the global file, are not there; what the agent makes in the
// folder stays its own, for its next turn and not the next conversation's;
// its sessions are where the terminal finds them, and resume.
func TestClaudeRealSandboxStateOfItsOwn(t *testing.T) {
	t.Parallel()
	f := newHostFixture(t)
	c := newRealClaude(t)
	c.home = f.home
	cfg := filepath.Join(f.home, ".claude")
	operator := map[string]string{
		filepath.Join(cfg, "settings.json"):                         `{"env":{"SETTINGS_MARK":"from the operator's settings"}}`,
		filepath.Join(cfg, "CLAUDE.md"):                             "OPERATOR-INSTRUCTIONS",
		filepath.Join(cfg, "agents", "reviewer.md"):                 "---\nname: reviewer\ndescription: Reviews.\n---\nReview.",
		filepath.Join(cfg, "projects", "-elsewhere", "their.jsonl"): `{"type":"user","message":{"role":"user","content":"THEIR-TRANSCRIPT"}}`,
		filepath.Join(cfg, "todos", "their-todo.json"):              "THEIR-TODO",
		filepath.Join(f.home, ".claude.json"):                       `{"userID":"the-operator","projects":{"/elsewhere":{"mcpServers":{"x":{"command":"THEIR-MCP"}}}}}`,
	}
	writeFiles(t, operator)
	mine, theirs := filepath.Join(f.work, "mine"), filepath.Join(f.work, "theirs")
	for _, d := range []string{mine, theirs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sb := sandboxtest.New(t, sandbox.Config{}, sandbox.Options{Hide: []string{f.store}, StateDir: filepath.Join(f.store, "agent-state")})
	// turn runs one prompt in workdir whose model runs probe in Bash, and
	// returns the run's events and the probe's sections.
	turn := func(name, workdir, session, probe string) ([]parser.Event, map[string]string) {
		t.Helper()
		c.srv.Handle(name, func(r *anthropictest.Request) anthropictest.Reply {
			if r.Step() == 0 {
				return anthropictest.Reply{Blocks: []anthropictest.Block{
					anthropictest.ToolUse("toolu_"+name, "Bash", map[string]string{"command": probe + "\ntrue", "description": "Probe"})}}
			}
			return anthropictest.Text(sandboxDone)
		})
		events := c.run(t, c.newEngine(name, engine.Config{}), engine.Turn{Prompt: "Probe.", Workdir: workdir, SessionID: session,
			Mode: engine.ModeBypass, Sandbox: sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: workdir})})
		if got := textOf(events); !strings.Contains(got, sandboxDone) {
			t.Fatalf("%s: answer %q; events: %s", name, got, realDump(events))
		}
		var out string
		for _, req := range c.srv.MessageRequests(name) {
			for _, res := range req.ToolResults() {
				out += res.ResultText()
			}
		}
		return events, sections(out)
	}
	mark := func(name string) string { return "echo '" + probeMark + name + "'; " }

	events, s := turn("first", mine, "", strings.Join([]string{
		mark("projects") + "ls -A $CLAUDE_CONFIG_DIR/projects",
		mark("theirs") + "cat $CLAUDE_CONFIG_DIR/projects/-elsewhere/their.jsonl $CLAUDE_CONFIG_DIR/todos/their-todo.json 2>&1",
		mark("global") + "cat $CLAUDE_CONFIG_DIR/.claude.json",
		mark("operator") + `echo "$SETTINGS_MARK"; cat $CLAUDE_CONFIG_DIR/CLAUDE.md $CLAUDE_CONFIG_DIR/agents/reviewer.md`,
		mark("plant") + `echo '{"hooks":{}}' > $CLAUDE_CONFIG_DIR/settings.json; echo x >> $CLAUDE_CONFIG_DIR/CLAUDE.md; echo x > $CLAUDE_CONFIG_DIR/agents/evil.md`,
		mark("own") + "mkdir $CLAUDE_CONFIG_DIR/commands && echo PLANTED > $CLAUDE_CONFIG_DIR/commands/evil.md && echo made",
	}, "\n"))
	own := engine.ClaudeProjectName(mine)
	if got := strings.Fields(s["projects"]); len(got) != 1 || got[0] != own {
		t.Errorf("projects/ inside holds %q, want only %s", got, own)
	}
	if strings.Contains(s["theirs"], "THEIR-") {
		t.Errorf("the agent read another folder's transcript or todos: %q", s["theirs"])
	}
	if strings.Contains(s["global"], "THEIR-MCP") || !strings.Contains(s["global"], "the-operator") {
		t.Errorf("the global file inside: %q; want the operator's without the other folders' projects", s["global"])
	}
	if !strings.Contains(s["operator"], "from the operator's settings") || !strings.Contains(s["operator"], "OPERATOR-INSTRUCTIONS") ||
		!strings.Contains(s["operator"], "Review.") {
		t.Errorf("the operator's settings, CLAUDE.md and agents inside: %q", s["operator"])
	}
	if n := strings.Count(s["plant"], "Read-only file system"); n != 3 {
		t.Errorf("changing the operator's settings, CLAUDE.md and agents: %q; want three read-only errors", s["plant"])
	}
	if strings.TrimSpace(s["own"]) != "made" {
		t.Errorf("a folder of the agent's own in its config folder: %q", s["own"])
	}
	if !strings.Contains(string(c.srv.MessageRequests("first")[0].Body), "OPERATOR-INSTRUCTIONS") {
		t.Error("the operator's CLAUDE.md did not reach the model")
	}
	for path, body := range operator {
		if b, err := os.ReadFile(path); err != nil || string(b) != body {
			t.Errorf("%s holds %q, %v", path, b, err)
		}
	}
	for _, p := range []string{filepath.Join(cfg, "agents", "evil.md"), filepath.Join(cfg, "commands"), filepath.Join(cfg, ".claude.json")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was made in the operator's config folder", p)
		}
	}
	first := realDone(t, events)
	sessions, err := c.newEngine("first", engine.Config{}).Sessions(mine, 1)
	if err != nil || len(sessions) != 1 || sessions[0].ID != first.SessionID {
		t.Errorf("the terminal's sessions of %s: %+v, %v; want %s", mine, sessions, err, first.SessionID)
	}

	events, s = turn("again", mine, first.SessionID, mark("own")+"cat $CLAUDE_CONFIG_DIR/commands/evil.md 2>&1")
	if d := realDone(t, events); d.SessionID != first.SessionID {
		t.Errorf("the next turn ended with session %s, want %s resumed", d.SessionID, first.SessionID)
	}
	if strings.TrimSpace(s["own"]) != "PLANTED" {
		t.Errorf("the folder's own file in its next turn: %q", s["own"])
	}

	_, s = turn("theirs", theirs, "", strings.Join([]string{
		mark("projects") + "ls -A $CLAUDE_CONFIG_DIR/projects",
		mark("planted") + "cat $CLAUDE_CONFIG_DIR/commands/evil.md 2>&1",
	}, "\n"))
	if got := strings.Fields(s["projects"]); len(got) != 1 || got[0] != engine.ClaudeProjectName(theirs) {
		t.Errorf("another conversation's projects/ inside holds %q", got)
	}
	if strings.Contains(s["planted"], "PLANTED") {
		t.Errorf("another conversation's CLI saw what the first one's agent made: %q", s["planted"])
	}
}
