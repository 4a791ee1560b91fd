package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSystemdUnitVerifies runs `systemd-analyze verify` on
// deploy/golem.service where systemd is installed. verify insists that
// ExecStart's program exists, so the copy it checks starts this test's
// binary instead of /usr/local/bin/golem; every other line is the file's.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	unit, err := os.ReadFile(filepath.Join("..", "..", "deploy", "golem.service"))
	if err != nil {
		t.Fatal(err)
	}
	const bin = "/usr/local/bin/golem"
	exe, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	text := string(unit)
	if !strings.Contains(text, "ExecStart="+bin+" serve --config ") {
		t.Fatalf("the unit's ExecStart does not run %s serve --config", bin)
	}
	path := filepath.Join(t.TempDir(), "golem.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(text, bin, exe)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", "--man=no", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
