package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/parser"
)

// skillsDir makes a skills folder: alpha with front matter, beta without a
// SKILL.md, and a hidden folder that is not a skill.
func skillsDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"alpha/SKILL.md":   "---\nname: Alpha helper\ndescription: >\n  Formats tables\n  neatly.\n---\n# Alpha\n",
		"beta/notes.txt":   "no SKILL.md here",
		".hidden/SKILL.md": "---\nname: hidden\n---\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readLink(t *testing.T, path string) string {
	t.Helper()
	dest, err := os.Readlink(path)
	if err != nil {
		t.Errorf("%s is not a symlink: %v", path, err)
	}
	return dest
}

func TestSkillInjection(t *testing.T) {
	for _, tc := range []struct {
		engine, subdir string
		claudeMD       bool
	}{
		{"claude-code", ".claude/skills", true},
		{"cursor", ".cursor/skills", false},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			t.Parallel()
			skills := skillsDir(t)
			e, _ := fake(t, tc.engine, engine.Config{SkillsDir: skills})
			work := t.TempDir()
			target := filepath.Join(work, tc.subdir)
			// Before the run: a stale link, a link to the wrong place, and a
			// real folder and a real file of the user.
			os.MkdirAll(filepath.Join(target, "mine"), 0o755)
			os.WriteFile(filepath.Join(target, "mine", "SKILL.md"), []byte("user's own"), 0o644)
			os.WriteFile(filepath.Join(target, "notes.md"), []byte("user's file"), 0o644)
			os.Symlink(filepath.Join(skills, "gone"), filepath.Join(target, "gone"))
			os.Symlink(t.TempDir(), filepath.Join(target, "alpha"))

			if ev := lastEvent(runTurn(t, e, engine.Turn{Prompt: "hi", Workdir: work})); ev.Type != parser.Done {
				t.Fatalf("run ended %+v", ev)
			}
			for _, name := range []string{"alpha", "beta"} {
				if got, want := readLink(t, filepath.Join(target, name)), filepath.Join(skills, name); got != want {
					t.Errorf("%s links to %s, want %s", name, got, want)
				}
			}
			for _, gone := range []string{"gone", ".hidden"} {
				if _, err := os.Lstat(filepath.Join(target, gone)); !os.IsNotExist(err) {
					t.Errorf("%s is in %s: %v", gone, tc.subdir, err)
				}
			}
			if b, err := os.ReadFile(filepath.Join(target, "mine", "SKILL.md")); err != nil || string(b) != "user's own" {
				t.Errorf("the user's folder changed: %q, %v", b, err)
			}
			if b, err := os.ReadFile(filepath.Join(target, "notes.md")); err != nil || string(b) != "user's file" {
				t.Errorf("the user's file changed: %q, %v", b, err)
			}

			md, err := os.ReadFile(filepath.Join(work, "CLAUDE.md"))
			if !tc.claudeMD {
				if !os.IsNotExist(err) {
					t.Errorf("CLAUDE.md written for %s: %v", tc.engine, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			text := string(md)
			first, _, _ := strings.Cut(text, "\n")
			if !strings.HasPrefix(first, "<!--") || !strings.Contains(first, "golem") {
				t.Errorf("CLAUDE.md's first line is not golem's marker: %q", first)
			}
			for _, want := range []string{"**Alpha helper**", "Formats tables neatly.", "**beta**", ".claude/skills/alpha/SKILL.md"} {
				if !strings.Contains(text, want) {
					t.Errorf("CLAUDE.md does not say %q:\n%s", want, text)
				}
			}
			if strings.Contains(text, "hidden") {
				t.Errorf("CLAUDE.md lists the hidden folder:\n%s", text)
			}

			// A skill removed from the skills folder disappears next run.
			os.RemoveAll(filepath.Join(skills, "beta"))
			runTurn(t, e, engine.Turn{Prompt: "hi", Workdir: work})
			if _, err := os.Lstat(filepath.Join(target, "beta")); !os.IsNotExist(err) {
				t.Errorf("beta's link is still there: %v", err)
			}
			if md, _ := os.ReadFile(filepath.Join(work, "CLAUDE.md")); strings.Contains(string(md), "beta") {
				t.Errorf("CLAUDE.md still lists beta:\n%s", md)
			}
		})
	}
}

func TestSkillInjectionKeepsUsersClaudeMD(t *testing.T) {
	t.Parallel()
	e, _ := fake(t, "claude-code", engine.Config{SkillsDir: skillsDir(t)})
	work := t.TempDir()
	const own = "# My project\n\nAlways run the linter.\n"
	os.WriteFile(filepath.Join(work, "CLAUDE.md"), []byte(own), 0o644)
	runTurn(t, e, engine.Turn{Prompt: "hi", Workdir: work})
	if b, _ := os.ReadFile(filepath.Join(work, "CLAUDE.md")); string(b) != own {
		t.Errorf("the user's CLAUDE.md changed:\n%s", b)
	}
	if readLink(t, filepath.Join(work, ".claude", "skills", "alpha")) == "" {
		t.Error("skills not linked")
	}
}

// TestSkillInjectionConcurrent runs several turns at once in one workdir;
// every run must succeed and leave the links right (run with -race).
func TestSkillInjectionConcurrent(t *testing.T) {
	t.Parallel()
	skills := skillsDir(t)
	e, _ := fake(t, "claude-code", engine.Config{SkillsDir: skills})
	work := t.TempDir()
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			r, err := e.Run(context.Background(), engine.Turn{Prompt: "hi", Workdir: work})
			if err != nil {
				t.Error(err)
				return
			}
			var end parser.Event
			for ev := range r.Events() {
				end = ev
			}
			if end.Type != parser.Done {
				t.Errorf("run ended %+v", end)
			}
		})
	}
	wg.Wait()
	if got := readLink(t, filepath.Join(work, ".claude", "skills", "alpha")); got != filepath.Join(skills, "alpha") {
		t.Errorf("alpha links to %s", got)
	}
	entries, _ := os.ReadDir(filepath.Join(work, ".claude", "skills"))
	if len(entries) != 2 {
		t.Errorf("%d entries in .claude/skills, want 2 (no leftover temporary links)", len(entries))
	}
}

// A skills folder the agent made a symlink to a host folder is left
// alone: golem removes and makes links there outside any sandbox (found
// by review: a link of the host folder was deleted).
func TestSkillInjectionRefusesASymlinkedSkillsFolder(t *testing.T) {
	t.Parallel()
	e, _ := fake(t, "claude-code", engine.Config{SkillsDir: skillsDir(t)})
	work, victim := t.TempDir(), t.TempDir()
	if err := os.Symlink("/etc/hostname", filepath.Join(victim, "important-link")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(work, ".claude"), 0o755)
	if err := os.Symlink(victim, filepath.Join(work, ".claude", "skills")); err != nil {
		t.Fatal(err)
	}
	runTurn(t, e, engine.Turn{Prompt: "hi", Workdir: work})
	if readLink(t, filepath.Join(victim, "important-link")) != "/etc/hostname" {
		t.Error("a link in the folder the skills symlink points at was removed")
	}
	if entries, _ := os.ReadDir(victim); len(entries) != 1 {
		t.Errorf("golem wrote into the symlinked folder: %v", entries)
	}
}

// A .claude the agent made a symlink to a host folder does not have
// golem make its skills folder there (an empty skills/ in /etc, say).
func TestSkillInjectionMakesNoFolderThroughASymlink(t *testing.T) {
	t.Parallel()
	e, _ := fake(t, "claude-code", engine.Config{SkillsDir: skillsDir(t)})
	work, victim := t.TempDir(), t.TempDir()
	if err := os.Symlink(victim, filepath.Join(work, ".claude")); err != nil {
		t.Fatal(err)
	}
	runTurn(t, e, engine.Turn{Prompt: "hi", Workdir: work})
	if entries, _ := os.ReadDir(victim); len(entries) != 0 {
		t.Errorf("golem made a folder through the .claude symlink: %v", entries)
	}
}
