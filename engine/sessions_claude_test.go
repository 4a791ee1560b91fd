package engine_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/engine"
)

// The fixtures in testdata/sessions/claude were recorded from the real
// Claude Code CLI (2.1.197) against the fake Messages API: session db2e0271
// has two prompts ("first prompt\nsecond line", then "again please"),
// 356511aa one ("run echo hi") whose Bash tool result is a "user" line too.
// Their cwd reads /WORKDIR, replaced by the test's own folder.
const (
	twoPrompts = "db2e0271-741d-4048-9b12-17b602c68216"
	onePrompt  = "356511aa-a952-4555-8104-4988624c5e6a"
)

// claudeHome is a Claude Code config folder with the recorded sessions in
// the projects folder of workdir, twoPrompts an hour older than onePrompt.
type claudeHome struct {
	config, workdir, project string
	eng                      *engine.ClaudeCode
}

func newClaudeHome(t *testing.T) *claudeHome {
	t.Helper()
	h := &claudeHome{config: filepath.Join(t.TempDir(), "claude"), workdir: t.TempDir()}
	h.eng = engine.NewClaudeCode(engine.Config{Env: map[string]string{"CLAUDE_CONFIG_DIR": h.config}})
	h.project = filepath.Join(h.config, "projects", engine.ClaudeProjectName(h.workdir))
	now := time.Now()
	h.copyFixture(t, twoPrompts, h.workdir, now.Add(-time.Hour))
	h.copyFixture(t, onePrompt, h.workdir, now.Add(-time.Minute))
	return h
}

// copyFixture writes the recorded session id as a session of workdir,
// last written at mtime.
func (h *claudeHome) copyFixture(t *testing.T, id, workdir string, mtime time.Time) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata/sessions/claude", id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(h.config, "projects", engine.ClaudeProjectName(workdir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, id+".jsonl")
	if err := os.WriteFile(path, bytes.ReplaceAll(raw, []byte("/WORKDIR"), []byte(workdir)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return path
}

func (h *claudeHome) list(t *testing.T, detail int) []engine.Session {
	t.Helper()
	got, err := h.eng.Sessions(h.workdir, detail)
	if err != nil {
		t.Fatalf("Sessions: %v", err)
	}
	return got
}

func TestClaudeSessions(t *testing.T) {
	h := newClaudeHome(t)
	got := h.list(t, 10)
	if len(got) != 2 {
		t.Fatalf("got %d sessions, want 2: %+v", len(got), got)
	}
	if got[0].ID != onePrompt || got[1].ID != twoPrompts {
		t.Errorf("order %s, %s; want the newest first", got[0].ID, got[1].ID)
	}
	if got[0].Prompts != 1 || got[0].FirstPrompt != "run echo hi" {
		t.Errorf("newest: %d prompts, first %q; want 1, \"run echo hi\" (a tool result is no prompt)", got[0].Prompts, got[0].FirstPrompt)
	}
	if got[1].Prompts != 2 || got[1].FirstPrompt != "first prompt\nsecond line" {
		t.Errorf("older: %d prompts, first %q; want 2, the first prompt", got[1].Prompts, got[1].FirstPrompt)
	}
	if got[1].Workdir != h.workdir {
		t.Errorf("workdir %q, want %q", got[1].Workdir, h.workdir)
	}
	// Only the first detail sessions are read.
	if got := h.list(t, 1); got[1].Prompts != -1 || got[1].FirstPrompt != "" {
		t.Errorf("past detail: %+v, want not read", got[1])
	}
	// A symlink to the working directory lists the same sessions, as the
	// CLI records its real path.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(h.workdir, link); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.eng.Sessions(link, 0); len(got) != 2 {
		t.Errorf("through a symlink: %d sessions, want 2", len(got))
	}
	// Nothing for a folder the CLI never ran in, and no error.
	if got, err := h.eng.Sessions(t.TempDir(), 10); err != nil || len(got) != 0 {
		t.Errorf("another folder: %v, %v; want none", got, err)
	}
}

// TestClaudeSessionsMalformedAndGrowing: broken lines, a line of 12 MB
// and a last line still being written are skipped; a file that grows is
// read on from where the last listing stopped.
func TestClaudeSessionsMalformedAndGrowing(t *testing.T) {
	h := newClaudeHome(t)
	path := filepath.Join(h.project, twoPrompts+".jsonl")
	prompt := func(text string) string {
		return `{"type":"user","message":{"role":"user","content":"` + text + `"},"sessionId":"` + twoPrompts + "\"}\n"
	}
	huge := `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"` + strings.Repeat("x", 12<<20) + `"}]}}` + "\n"
	hugePrompt := prompt(strings.Repeat("y", 5<<20)) // past maxLine: skipped unread
	appendTo(t, path, "{not json\n\n[1,2]\n"+`{"type":"user","message":"what"}`+"\n"+huge+hugePrompt+prompt("third"))
	if got := h.list(t, 10); got[0].ID != twoPrompts || got[0].Prompts != 3 {
		t.Fatalf("after malformed lines: %+v, want twoPrompts first with 3 prompts", got[0])
	}
	appendTo(t, path, `{"type":"user","message":{"role":"user","content":"half`) // no newline yet
	if got := h.list(t, 10); got[0].Prompts != 3 {
		t.Errorf("with a half line: %d prompts, want 3", got[0].Prompts)
	}
	appendTo(t, path, ` written"}}`+"\n"+prompt("fifth"))
	if got := h.list(t, 10); got[0].Prompts != 5 || got[0].FirstPrompt != "first prompt\nsecond line" {
		t.Errorf("grown: %d prompts, first %q; want 5, the first", got[0].Prompts, got[0].FirstPrompt)
	}
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestClaudeSessionsSymlinks: a session file or project folder that is a
// symlink out of the CLI's folder is not read; one inside it is.
func TestClaudeSessionsSymlinks(t *testing.T) {
	h := newClaudeHome(t)
	outside := filepath.Join(t.TempDir(), "secret.jsonl")
	os.WriteFile(outside, []byte(`{"type":"user","message":{"role":"user","content":"secret"}}`+"\n"), 0o600)
	out := "11111111-2222-3333-4444-555555555555"
	if err := os.Symlink(outside, filepath.Join(h.project, out+".jsonl")); err != nil {
		t.Fatal(err)
	}
	in := "66666666-2222-3333-4444-555555555555"
	if err := os.Symlink(filepath.Join(h.project, twoPrompts+".jsonl"), filepath.Join(h.project, in+".jsonl")); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, s := range h.list(t, 10) {
		ids[s.ID] = true
	}
	if ids[out] || !ids[in] || len(ids) != 3 {
		t.Errorf("listed %v; want the two recorded and the link inside, not the one out", ids)
	}

	// A project folder linked out of the CLI's folder.
	other := t.TempDir()
	elsewhere := t.TempDir()
	os.WriteFile(filepath.Join(elsewhere, twoPrompts+".jsonl"), []byte(`{"type":"user","message":{"role":"user","content":"x"}}`+"\n"), 0o600)
	if err := os.Symlink(elsewhere, filepath.Join(h.config, "projects", engine.ClaudeProjectName(other))); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.eng.Sessions(other, 10); len(got) != 0 {
		t.Errorf("a project folder linked out: %+v, want nothing", got)
	}
}

// TestClaudeSessionsElsewhere: a session of another working directory is
// found by its prefix, with that directory.
func TestClaudeSessionsElsewhere(t *testing.T) {
	h := newClaudeHome(t)
	other := t.TempDir()
	h.copyFixture(t, "db2e0271-741d-4048-9b12-17b602c68216", other, time.Now())
	os.Rename(filepath.Join(h.config, "projects", engine.ClaudeProjectName(other), twoPrompts+".jsonl"),
		filepath.Join(h.config, "projects", engine.ClaudeProjectName(other), "abcd0271-741d-4048-9b12-17b602c68216.jsonl"))
	got, err := h.eng.SessionsElsewhere(h.workdir, "abcd")
	if err != nil || len(got) != 1 || got[0].Workdir != other {
		t.Fatalf("elsewhere: %+v, %v; want the one session in %s", got, err, other)
	}
	if got, _ := h.eng.SessionsElsewhere(h.workdir, "db2e"); len(got) != 0 {
		t.Errorf("a session of this directory is not elsewhere: %+v", got)
	}
}

func TestClaudeProjectName(t *testing.T) {
	for _, c := range []struct{ dir, want string }{
		// recorded from the CLI
		{"/tmp/TestZZScratchRecord1375445820/002/My_Proj.v2 ü", "-tmp-TestZZScratchRecord1375445820-002-My-Proj-v2--"},
		{"/work/h-sessions", "-work-h-sessions"},
		{"/a/😀", "-a---"}, // two UTF-16 units
	} {
		if got := engine.ClaudeProjectName(c.dir); got != c.want {
			t.Errorf("ClaudeProjectName(%q) = %q, want %q", c.dir, got, c.want)
		}
	}
	long := "/" + strings.Repeat("d", 250)
	if got := engine.ClaudeProjectName(long); len(got) <= 201 || !strings.HasPrefix(got, "-"+strings.Repeat("d", 199)+"-") {
		t.Errorf("long path: %q, want 200 characters, a dash and a hash", got)
	}
}

func TestClaudeResumeCommand(t *testing.T) {
	e := engine.NewClaudeCode(engine.Config{Env: map[string]string{"CLAUDE_CONFIG_DIR": "/srv/golem claude"}})
	dir := t.TempDir()
	got := e.ResumeCommand(dir, twoPrompts)
	want := "cd " + dir + " && CLAUDE_CONFIG_DIR='/srv/golem claude' claude --resume " + twoPrompts
	if got != want {
		t.Errorf("ResumeCommand = %q, want %q", got, want)
	}
}

// TestClaudeSessionsLinkFromAnotherProject: a sandboxed agent writes its
// working directory's project folder, and a session file there that
// links into another working directory's folder (its id learnt from
// /resume's answers) is not listed, with that session's first prompt,
// as this working directory's.
func TestClaudeSessionsLinkFromAnotherProject(t *testing.T) {
	h := newClaudeHome(t)
	other := t.TempDir()
	theirs := "77777777-2222-3333-4444-555555555555"
	theirDir := filepath.Join(h.config, "projects", engine.ClaudeProjectName(other))
	writeFiles(t, map[string]string{filepath.Join(theirDir, theirs+".jsonl"): `{"type":"user","message":{"role":"user","content":"their secret"}}` + "\n"})
	if err := os.Symlink(filepath.Join("..", engine.ClaudeProjectName(other), theirs+".jsonl"), filepath.Join(h.project, theirs+".jsonl")); err != nil {
		t.Fatal(err)
	}
	for _, s := range h.list(t, 10) {
		if s.ID == theirs {
			t.Errorf("listed %+v, another working directory's session, as this one's", s)
		}
	}
	if got, _ := h.eng.Sessions(other, 10); len(got) != 1 || got[0].ID != theirs {
		t.Errorf("sessions of the other working directory: %+v, want its one", got)
	}
}
