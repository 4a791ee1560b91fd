package engine

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSkillInjectionInPlace: once an injection has found everything in
// place, the next ones run nothing; a skill added, edited or removed, a
// link removed or the context file deleted is still put right by the next
// call.
func TestSkillInjectionInPlace(t *testing.T) {
	t.Parallel()
	skills, work := t.TempDir(), t.TempDir()
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(skills, "alpha", "SKILL.md"), "---\ndescription: Formats tables.\n---\n")
	write(filepath.Join(skills, "beta", "notes.txt"), "no SKILL.md")
	target := filepath.Join(work, ".claude", "skills")
	claudeMD := filepath.Join(work, "CLAUDE.md")
	log := slog.New(slog.DiscardHandler)
	inject := func() {
		t.Helper()
		if err := injectSkills(work, skills, ".claude/skills", "CLAUDE.md", log); err != nil {
			t.Fatal(err)
		}
	}
	// age makes every file look written an hour ago, as files are when
	// turns start long after the last change.
	age := func() {
		t.Helper()
		old := time.Now().Add(-time.Hour)
		for _, p := range []string{skills, filepath.Join(skills, "alpha"), filepath.Join(skills, "alpha", "SKILL.md"),
			filepath.Join(skills, "beta"), filepath.Join(skills, "gamma"), filepath.Join(skills, "gamma", "SKILL.md"), target, claudeMD} {
			if err := os.Chtimes(p, old, old); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
	}
	inPlace := func() bool {
		v, ok := injections.Load(strings.Join([]string{filepath.Clean(work), skills, ".claude/skills", "CLAUDE.md"}, "\x00"))
		return ok && v.(*injection).inPlace.Load() != nil
	}
	settle := func() { // a run that finds everything in place, then one that runs nothing
		t.Helper()
		age()
		inject()
		if !inPlace() {
			t.Fatal("an injection that changed nothing is not remembered as in place")
		}
		inject()
	}
	mdSays := func(want string) {
		t.Helper()
		if b, _ := os.ReadFile(claudeMD); !strings.Contains(string(b), want) {
			t.Errorf("CLAUDE.md does not say %q:\n%s", want, b)
		}
	}
	linked := func(name string, want bool) {
		t.Helper()
		dest, err := os.Readlink(filepath.Join(target, name))
		if want && dest != filepath.Join(skills, name) {
			t.Errorf("%s links to %q (%v)", name, dest, err)
		}
		if !want && err == nil {
			t.Errorf("%s is still linked", name)
		}
	}

	inject()
	if inPlace() {
		t.Error("an injection that just wrote the links is remembered as in place")
	}
	settle()
	linked("alpha", true)
	mdSays("Formats tables.")

	write(filepath.Join(skills, "alpha", "SKILL.md"), "---\ndescription: Draws charts, and more.\n---\n")
	inject()
	mdSays("Draws charts, and more.")

	settle()
	if err := os.Remove(filepath.Join(target, "beta")); err != nil {
		t.Fatal(err)
	}
	inject()
	linked("beta", true)

	settle()
	if err := os.Remove(claudeMD); err != nil {
		t.Fatal(err)
	}
	inject()
	mdSays("**alpha**")

	settle()
	write(filepath.Join(skills, "gamma", "SKILL.md"), "---\ndescription: New here.\n---\n")
	inject()
	linked("gamma", true)
	mdSays("New here.")

	settle()
	if err := os.RemoveAll(filepath.Join(skills, "beta")); err != nil {
		t.Fatal(err)
	}
	inject()
	linked("beta", false)
}
