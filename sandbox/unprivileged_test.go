package sandbox

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// asUser names the unprivileged account TestUnprivileged makes when the
// tests run as root, and marks its run of the other tests.
const asUser = "golem-sbtest"

// TestUnprivileged runs TestFiles(InHostTmp), TestNetwork,
// TestWorktree(Pointers), TestSockets, TestProcesses and TestNotRoot
// again as an unprivileged user (made here when the tests run as root, as CI does):
// bubblewrap then needs unprivileged user namespaces, which is how golem
// runs as a service. Run unprivileged, the other tests are already that.
func TestUnprivileged(t *testing.T) {
	if os.Getenv("GOLEM_SANDBOX_AS_USER") != "" {
		t.Skip("this is the unprivileged run")
	}
	if os.Geteuid() != 0 {
		t.Skip("the tests already run unprivileged: TestFiles, TestNetwork and TestWorktree are that run")
	}
	need(t, Config{}, Options{}) // skips where bwrap cannot work at all
	u, err := user.Lookup(asUser)
	if err != nil {
		if _, err := exec.LookPath("useradd"); err != nil {
			t.Skip("running as root without useradd: cannot make an unprivileged user to run the sandbox as")
		}
		if out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", asUser).CombinedOutput(); err != nil {
			t.Fatalf("useradd %s: %v: %s", asUser, err, out)
		}
		if u, err = user.Lookup(asUser); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	// The test binary where that user may run it, and a home of its own.
	dir, err := os.MkdirTemp("/var/tmp", "golem-sbtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "sandbox.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	os.Mkdir(home, 0o700)
	os.Chown(home, uid, gid)
	cmd := exec.Command(bin, "-test.run", "^(TestFiles|TestNetwork|TestWorktree|TestWorktreePointers|TestSockets|TestProcesses|TestNotRoot|TestFilesInHostTmp)$", "-test.v", "-test.count=1")
	cmd.Dir = home
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "GOLEM_SANDBOX_AS_USER=1", "GOLEM_REQUIRE_TOOLS=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the sandbox tests as %s (uid %d): %v\n%s", asUser, uid, err, out)
	}
	for _, name := range []string{"TestFiles", "TestNetwork", "TestWorktree", "TestWorktreePointers", "TestSockets", "TestProcesses", "TestNotRoot", "TestFilesInHostTmp"} {
		if !strings.Contains(string(out), "--- PASS: "+name) {
			t.Errorf("%s did not pass as %s:\n%s", name, asUser, out)
		}
	}
}
