package worktree

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// golem's own git runs nothing the repository's config names: an
// fsmonitor or a hook the agent planted in its worktree's metadata does not
// run on the host (found by review).
func TestGolemsGitRunsNoPlantedCommand(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	for _, args := range [][]string{{"init", "-q"}, {"config", "core.fsmonitor", "touch " + marker + " #"},
		{"config", "core.hooksPath", dir + "/hooks"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	os.MkdirAll(filepath.Join(dir, "hooks"), 0o755)
	os.WriteFile(filepath.Join(dir, "hooks", "post-index-change"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-host-secret")
	for _, args := range [][]string{{"status", "--porcelain"}, {"add", "--all"}} {
		if _, err := git(context.Background(), 10*time.Second, dir, args...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("golem's git ran a command the repository's config planted")
	}
	for _, kv := range gitEnviron() {
		if kv == "SLACK_BOT_TOKEN=xoxb-host-secret" {
			t.Error("golem's git gets golem's environment")
		}
	}
}
