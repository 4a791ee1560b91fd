package engine_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/sandbox"
)

func writeFiles(t *testing.T, files map[string]string) {
	t.Helper()
	for path, body := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHandOnRollouts: after a sandboxed Codex turn, the rollouts it
// started in the working directory's own folder move to the real
// sessions tree; one that records another working directory (the agent
// wrote it), one already in the real tree and a symlink stay; the empty
// files bound rollouts were mounted on go.
func TestHandOnRollouts(t *testing.T) {
	own, real := t.TempDir(), t.TempDir()
	day := filepath.Join("sessions", "2026", "12", "03")
	meta := func(cwd string) string {
		return `{"type":"session_meta","payload":{"cwd":"` + cwd + `"}}` + "\n" + `{"type":"event_msg"}` + "\n"
	}
	workdir := "/work/mine"
	writeFiles(t, map[string]string{
		filepath.Join(own, day, "rollout-new.jsonl"):     meta(workdir),
		filepath.Join(own, day, "rollout-planted.jsonl"): meta("/work/theirs"),
		filepath.Join(own, day, "rollout-bound.jsonl"):   "",
		filepath.Join(own, day, "rollout-clash.jsonl"):   meta(workdir),
		filepath.Join(real, day, "rollout-clash.jsonl"):  "the real one",
		filepath.Join(real, "secret"):                    "secret",
	})
	os.Symlink(filepath.Join(real, "secret"), filepath.Join(own, day, "rollout-link.jsonl"))
	root, err := os.OpenRoot(own)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	engine.HandOnRollouts(root, real, workdir, nil)

	if b, err := os.ReadFile(filepath.Join(real, day, "rollout-new.jsonl")); err != nil || string(b) != meta(workdir) {
		t.Errorf("the new rollout in the real tree: %q, %v", b, err)
	}
	for name, there := range map[string]bool{"rollout-new.jsonl": false, "rollout-planted.jsonl": true, "rollout-bound.jsonl": false,
		"rollout-clash.jsonl": true, "rollout-link.jsonl": true} {
		if _, err := os.Lstat(filepath.Join(own, day, name)); (err == nil) != there {
			t.Errorf("%s in the own folder: %v, want there %v", name, err, there)
		}
	}
	for name, want := range map[string]string{"rollout-clash.jsonl": "the real one", "rollout-planted.jsonl": "", "rollout-link.jsonl": ""} {
		b, err := os.ReadFile(filepath.Join(real, day, name))
		if want == "" && err == nil || want != "" && string(b) != want {
			t.Errorf("%s in the real tree: %q, %v", name, b, err)
		}
	}
}

// TestGeminiProject: a working directory's project folder is the one the
// CLI registered for it in the real projects.json, if its marker agrees;
// else one golem names, with its markers; a marker that claims the
// working directory is not enough, and the sessions golem lists skip a
// golem-named folder whose marker names another directory.
func TestGeminiProject(t *testing.T) {
	dir := t.TempDir()
	mine, theirs, third := "/work/mine", "/work/theirs", "/work/third"
	writeFiles(t, map[string]string{
		filepath.Join(dir, "projects.json"):                                                                     `{"projects":{"/work/mine":"mine"}}`,
		filepath.Join(dir, "tmp", "mine", ".project_root"):                                                      mine,
		filepath.Join(dir, "tmp", "claimed", ".project_root"):                                                   theirs,
		filepath.Join(dir, "tmp", "claimed", "chats", "x"):                                                      "",
		filepath.Join(dir, "tmp", engine.GeminiName(third), ".project_root"):                                    theirs,
		filepath.Join(dir, "tmp", engine.GeminiName(third), "chats", "session-2026-12-03T06-00-abcdef12.jsonl"): `{"sessionId":"abcdef12-0000-4000-8000-000000000000"}` + "\n",
	})
	if got, err := engine.GeminiProject(dir, mine); err != nil || got != "mine" {
		t.Errorf("the registered folder: %q, %v", got, err)
	}
	got, err := engine.GeminiProject(dir, theirs)
	if err != nil || got != engine.GeminiName(theirs) || !strings.HasPrefix(got, "golem-theirs-") {
		t.Fatalf("a working directory with only a claiming marker: %q, %v", got, err)
	}
	for _, base := range []string{"tmp", "history"} {
		if b, err := os.ReadFile(filepath.Join(dir, base, got, ".project_root")); err != nil || string(b) != theirs {
			t.Errorf("%s/%s/.project_root: %q, %v", base, got, b, err)
		}
	}
	if engine.GeminiName("/a/b") == engine.GeminiName("/c/b") {
		t.Error("two working directories of one name share a folder")
	}
	home := filepath.Dir(dir)
	os.Rename(dir, filepath.Join(home, ".gemini"))
	e := engine.NewGemini(engine.Config{Env: map[string]string{"HOME": home}})
	if s, err := e.Sessions(theirs, 0); err != nil || len(s) != 0 {
		t.Errorf("sessions of %s: %+v, %v; want none from another folder's marker", theirs, s, err)
	}
}

// TestGeminiProjectMarkerLink: the agent of a working directory writes
// its project folder, and a .project_root it turned into a symlink to
// another project's marker (or a chat) does not get golem, writing the
// marker before the turn, to overwrite that file: the link is replaced.
func TestGeminiProjectMarkerLink(t *testing.T) {
	dir := t.TempDir()
	mine, theirs := "/work/mine", "/work/theirs"
	name := engine.GeminiName(mine)
	writeFiles(t, map[string]string{
		filepath.Join(dir, "tmp", "theirs", ".project_root"):     theirs,
		filepath.Join(dir, "history", "theirs", ".project_root"): theirs,
		filepath.Join(dir, "tmp", name, "chats", "x"):            "",
		filepath.Join(dir, "history", name, "x"):                 "",
	})
	for _, base := range []string{"tmp", "history"} {
		if err := os.Symlink(filepath.Join("..", "theirs", ".project_root"), filepath.Join(dir, base, name, ".project_root")); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := engine.GeminiProject(dir, mine); err != nil || got != name {
		t.Fatalf("GeminiProject = %q, %v; want %q", got, err, name)
	}
	for _, base := range []string{"tmp", "history"} {
		if b, err := os.ReadFile(filepath.Join(dir, base, "theirs", ".project_root")); err != nil || string(b) != theirs {
			t.Errorf("%s/theirs/.project_root = %q, %v; golem wrote through the agent's symlink", base, b, err)
		}
		marker := filepath.Join(dir, base, name, ".project_root")
		if fi, err := os.Lstat(marker); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s: %v, %v; want golem's own file", marker, fi, err)
		} else if b, _ := os.ReadFile(marker); string(b) != mine {
			t.Errorf("%s = %q, want %q", marker, b, mine)
		}
	}
}

// TestGeminiSessionsLinkOut: the agent writes its own project folder in
// ~/.gemini/tmp, and a chats/ (or a session file) there that links into
// another project's folder does not get that project's sessions, with
// their first prompts, listed for this working directory.
func TestGeminiSessionsLinkOut(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".gemini")
	mine, theirs := "/work/mine", "/work/theirs"
	session := "session-2026-12-03T06-00-abcdef12.jsonl"
	body := `{"sessionId":"abcdef12-0000-4000-8000-000000000000"}` + "\n" +
		`{"id":"m1","type":"user","content":[{"text":"their secret prompt"}]}` + "\n"
	writeFiles(t, map[string]string{
		filepath.Join(dir, "projects.json"):                     `{"projects":{"/work/theirs":"theirs"}}`,
		filepath.Join(dir, "tmp", "theirs", ".project_root"):    theirs,
		filepath.Join(dir, "tmp", "theirs", "chats", session):   body,
		filepath.Join(dir, "tmp", "other", ".project_root"):     theirs,
		filepath.Join(dir, "tmp", "other", "chats", "x"):        "",
		filepath.Join(dir, "tmp", "golem-x", "chats", "x"):      "",
		filepath.Join(dir, "tmp", engine.GeminiName(mine), "x"): "",
	})
	e := engine.NewGemini(engine.Config{Env: map[string]string{"HOME": home}})
	if s, err := e.Sessions(theirs, 1); err != nil || len(s) != 1 || s[0].FirstPrompt != "their secret prompt" {
		t.Fatalf("sessions of %s: %+v, %v; want its one", theirs, s, err)
	}
	name := engine.GeminiName(mine)
	if _, err := engine.GeminiProject(dir, mine); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "theirs", "chats"), filepath.Join(dir, "tmp", name, "chats")); err != nil {
		t.Fatal(err)
	}
	if s, err := e.Sessions(mine, 1); err != nil || len(s) != 0 {
		t.Errorf("sessions of %s with chats/ a link to another project's: %+v, %v; want none", mine, s, err)
	}
	os.Remove(filepath.Join(dir, "tmp", name, "chats"))
	os.MkdirAll(filepath.Join(dir, "tmp", name, "chats"), 0o755)
	if err := os.Symlink(filepath.Join("..", "..", "theirs", "chats", session), filepath.Join(dir, "tmp", name, "chats", session)); err != nil {
		t.Fatal(err)
	}
	if s, err := e.Sessions(mine, 1); err != nil || len(s) != 0 {
		t.Errorf("sessions of %s with a session file linked from another project: %+v, %v; want none", mine, s, err)
	}
	if s, err := e.Sessions(theirs, 1); err != nil || len(s) != 1 {
		t.Errorf("sessions of %s: %+v, %v; want still its one", theirs, s, err)
	}
}

// TestHandOnRolloutsResumedTurnedElsewhere: the rollout a Codex turn
// resumes is the real file, bound writable, and an agent that rewrote
// its first line to record another working directory does not get it
// listed (and bound, resumed) there: once the turn ends it is out of
// the listing.
func TestHandOnRolloutsResumedTurnedElsewhere(t *testing.T) {
	own, real := t.TempDir(), t.TempDir()
	day := filepath.Join("sessions", "2026", "12", "03")
	meta := func(cwd string) string {
		return `{"type":"session_meta","payload":{"cwd":"` + cwd + `"}}` + "\n"
	}
	mine, theirs := "/work/mine", "/work/theirs"
	kept := filepath.Join(day, "rollout-2026-12-03T06-00-00-11111111-2222-4333-8444-555555555555.jsonl")
	turned := filepath.Join(day, "rollout-2026-12-03T06-00-00-66666666-2222-4333-8444-555555555555.jsonl")
	writeFiles(t, map[string]string{
		filepath.Join(real, kept):   meta(mine),
		filepath.Join(real, turned): meta(theirs) + `{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"UserMessage","content":[{"type":"text","text":"planted"}]}}}` + "\n",
	})
	root, err := os.OpenRoot(own)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	engine.HandOnRollouts(root, real, mine, []string{kept, turned})

	e := engine.NewCodex(engine.Config{Env: map[string]string{"CODEX_HOME": real}})
	if s, _ := e.Sessions(theirs, 1); len(s) != 0 {
		t.Errorf("sessions of %s: %+v; want none, the one listed there was another working directory's", theirs, s)
	}
	if s, _ := e.Sessions(mine, 1); len(s) != 1 {
		t.Errorf("sessions of %s: %+v; want the one still its own", mine, s)
	}
}

// TestOpenCodeStateFolderIsTheDataFolder: with XDG_STATE_HOME and
// XDG_DATA_HOME one folder, OpenCode's state folder is its data folder
// too, and no Private covers it: the sandbox's data folder (its
// database, its login) would be the working directory's own, and the
// chat's sessions out of the terminal's and golem's reach.
func TestOpenCodeStateFolderIsTheDataFolder(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home, "XDG_DATA_HOME": filepath.Join(home, "xdg"), "XDG_STATE_HOME": filepath.Join(home, "xdg")}
	getenv := func(k string) string { return env[k] }
	state, _ := engine.OpenCodeState(getenv)
	private, _ := engine.OpenCodePrivate(getenv, engine.Turn{})
	if len(state) != 1 {
		t.Fatalf("state folders %v, want the data folder", state)
	}
	for _, p := range private {
		if p.Dir == state[0] {
			t.Errorf("a Private over the shared data folder %s: %+v", state[0], p)
		}
	}
	if len(private) != 2+7 {
		t.Errorf("%d Privates, want the config and cache folders and the data folder's own seven", len(private))
	}
}

// TestOpenCodeOwnData: every folder of OpenCode's data folder (1.18.33:
// Global.Path and its joins of Path.data) but for its database and
// logins is the working directory's own: they hold the worktrees it
// worked in (snapshot), what its tools read (tool-output), and the clones
// of the repositories its config names (repos), whose git config the
// next OpenCode runs.
func TestOpenCodeOwnData(t *testing.T) {
	home := t.TempDir()
	getenv := func(k string) string { return map[string]string{"HOME": home}[k] }
	private, _ := engine.OpenCodePrivate(getenv, engine.Turn{})
	data := filepath.Join(home, ".local", "share", "opencode")
	for _, name := range []string{"snapshot", "tool-output", "plans", "storage", "worktree", "log", "repos"} {
		if !slices.ContainsFunc(private, func(p sandbox.Private) bool { return p.Dir == filepath.Join(data, name) }) {
			t.Errorf("OpenCode's %s is shared", name)
		}
	}
}
