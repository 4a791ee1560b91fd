package engine_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/anthropictest"
)

// TestOpenCodeRealSessions: the sessions the real OpenCode CLI recorded
// (against the fake API) are listed through `opencode session list` for
// their working directory, with the prompts typed counted from `opencode
// export`; one of another folder is found by prefix; and the one listed
// is resumed by the engine's --session.
func TestOpenCodeRealSessions(t *testing.T) {
	t.Parallel()
	c := newRealOpenCode(t)
	e := c.newEngine(anthropictest.ScenarioText, engine.Config{})
	if got, err := e.Sessions(c.workdir, 10); err != nil || len(got) != 0 {
		t.Fatalf("Sessions before any run: %+v, %v; want none", got, err)
	}
	first := openCodeDone(t, c.run(t, e, engine.Turn{Prompt: "hello oc\nsecond line"}), 1).SessionID
	openCodeDone(t, c.run(t, e, engine.Turn{Prompt: "again oc", SessionID: first}), 1)
	other := openCodeDone(t, c.run(t, e, engine.Turn{Prompt: "elsewhere", Workdir: t.TempDir()}), 1).SessionID

	got, err := e.Sessions(c.workdir, 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("Sessions: %+v, %v; want the one session of the workdir", got, err)
	}
	if s := got[0]; s.ID != first || s.Prompts != 2 || s.FirstPrompt != "hello oc\nsecond line" || s.Workdir != c.workdir || s.Written.IsZero() {
		t.Errorf("session %+v, want %s in %s with 2 prompts, the first one first", s, first, c.workdir)
	}
	if got, _ := e.Sessions(c.workdir, 0); len(got) != 1 || got[0].Prompts != -1 {
		t.Errorf("Sessions without detail: %+v, want the session uncounted", got)
	}
	if got, _ := e.SessionsElsewhere(c.workdir, other[:len(other)-2]); len(got) != 1 || got[0].ID != other || got[0].Workdir == c.workdir || got[0].Workdir == "" {
		t.Errorf("elsewhere: %+v, want %s with its workdir", got, other)
	}
	if got, _ := e.SessionsElsewhere(c.workdir, first); len(got) != 0 {
		t.Errorf("elsewhere %s: %+v, want none (it is of this workdir)", first, got)
	}
	cmd := e.ResumeCommand(c.workdir, first)
	if !strings.HasPrefix(cmd, "cd "+c.workdir+" && ") || !strings.Contains(cmd, "HOME="+c.home+" ") || !strings.HasSuffix(cmd, " --session "+first) {
		t.Errorf("ResumeCommand = %q", cmd)
	}

	// The listed session is the one a run resumes.
	d := openCodeDone(t, c.run(t, e, engine.Turn{Prompt: "third oc", SessionID: got[0].ID}), 1)
	if d.SessionID != first {
		t.Errorf("resuming the listed session ran %s, want %s", d.SessionID, first)
	}
	if got, _ := e.Sessions(c.workdir, 10); len(got) != 1 || got[0].Prompts != 3 {
		t.Errorf("after a third prompt: %+v, want 3 prompts counted afresh", got)
	}
}

// TestOpenCodeSessionsNoCLI: without its CLI, listing says so.
func TestOpenCodeSessionsNoCLI(t *testing.T) {
	e := engine.NewOpenCode(engine.Config{Command: t.TempDir() + "/opencode"})
	if _, err := e.Sessions(t.TempDir(), 10); err == nil {
		t.Error("Sessions without the CLI succeeded")
	}
}

// BenchmarkOpenCodeRealSessions: one /sessions of OpenCode once its
// sessions' prompts are cached, which is one start of the real CLI
// (`opencode session list`).
func BenchmarkOpenCodeRealSessions(b *testing.B) {
	c := newRealOpenCode(b)
	e := c.newEngine(anthropictest.ScenarioText, engine.Config{})
	for _, p := range []string{"one", "two"} {
		c.run(b, e, engine.Turn{Prompt: p})
	}
	if got, err := e.Sessions(c.workdir, 10); err != nil || len(got) != 2 || got[0].Prompts != 1 {
		b.Fatalf("Sessions: %+v, %v", got, err)
	}
	for b.Loop() {
		if _, err := e.Sessions(c.workdir, 10); err != nil {
			b.Fatal(err)
		}
	}
}

// TestOpenCodeRealSessionsHugeExport: a session whose export is past the
// most golem takes in is listed uncounted; the CLI is stopped, not read
// to its end. (Not parallel: it sets a limit of the package.)
func TestOpenCodeRealSessionsHugeExport(t *testing.T) {
	c := newRealOpenCode(t)
	e := c.newEngine(anthropictest.ScenarioText, engine.Config{})
	id := openCodeDone(t, c.run(t, e, engine.Turn{Prompt: "hello big"}), 1).SessionID
	engine.SetOpenCodeOutputMax(t, 2000) // the listing of one session fits, its export does not
	got, err := e.Sessions(c.workdir, 10)
	if err != nil || len(got) != 1 || got[0].ID != id || got[0].Prompts != -1 || got[0].FirstPrompt != "" {
		t.Errorf("Sessions: %+v, %v; want %s listed, its prompts not counted", got, err, id)
	}
}

// TestOpenCodeRealSessionsGitProject: in a git repository OpenCode lists
// the sessions of its project, which its worktrees share: each folder
// gets its own, a prefix of the other's is found as another folder's, and
// a session outside the repository is not seen from it.
func TestOpenCodeRealSessionsGitProject(t *testing.T) {
	t.Parallel()
	c := newRealOpenCode(t)
	e := c.newEngine(anthropictest.ScenarioText, engine.Config{})
	repo, wt := c.workdir, filepath.Join(t.TempDir(), "wt")
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.email=g@example.com", "-c", "user.name=g", "commit", "-q", "--allow-empty", "-m", "start"}, {"worktree", "add", "-q", wt}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	inRepo := openCodeDone(t, c.run(t, e, engine.Turn{Prompt: "in the repo", Workdir: repo}), 1).SessionID
	inWT := openCodeDone(t, c.run(t, e, engine.Turn{Prompt: "in the worktree", Workdir: wt}), 1).SessionID
	outside := openCodeDone(t, c.run(t, e, engine.Turn{Prompt: "outside", Workdir: t.TempDir()}), 1).SessionID

	for _, tc := range []struct{ dir, own, other string }{{repo, inRepo, inWT}, {wt, inWT, inRepo}} {
		if got, err := e.Sessions(tc.dir, 0); err != nil || len(got) != 1 || got[0].ID != tc.own {
			t.Errorf("Sessions(%s): %+v, %v; want only %s", tc.dir, got, err, tc.own)
		}
		if got, _ := e.SessionsElsewhere(tc.dir, tc.other); len(got) != 1 || got[0].Workdir == tc.dir {
			t.Errorf("SessionsElsewhere(%s, %s): %+v, want it of the other folder", tc.dir, tc.other, got)
		}
	}
	if got, _ := e.SessionsElsewhere(repo, outside); len(got) != 0 {
		t.Errorf("from the repository a session outside it is seen: %+v", got)
	}
}
