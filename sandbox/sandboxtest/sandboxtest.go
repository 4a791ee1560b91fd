// Package sandboxtest gives tests golem's sandbox where bubblewrap works,
// and skips them where it does not (failing instead with
// GOLEM_REQUIRE_TOOLS=1, as `make test` sets).
package sandboxtest

import (
	"context"
	"os"
	"testing"

	"github.com/golem-chat/golem/sandbox"
)

// New returns golem's sandbox for cfg (mode on when cfg says none),
// keeping the CLIs' own state in a folder of the test's where o names none.
func New(t testing.TB, cfg sandbox.Config, o sandbox.Options) *sandbox.Sandbox {
	t.Helper()
	Require(t)
	if cfg.Mode == "" {
		cfg.Mode = sandbox.ModeOn
	}
	if o.StateDir == "" {
		o.StateDir = Dir(t)
	}
	s, err := sandbox.New(context.Background(), cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Require skips the test where bwrap cannot work here.
func Require(t testing.TB) {
	t.Helper()
	st := sandbox.Probe(context.Background())
	if st.Works() {
		return
	}
	if os.Getenv("GOLEM_REQUIRE_TOOLS") == "1" {
		t.Fatalf("the sandbox cannot work here: %v; `make test` installs bubblewrap", st.Err)
	}
	t.Skipf("the sandbox cannot work here: %v", st.Err)
}

// Dir returns a new folder outside /tmp (which a sandbox replaces by its
// own), removed when the test ends.
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "golem-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
