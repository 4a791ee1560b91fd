package core_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/sandbox"
	"github.com/golem-chat/golem/sandbox/sandboxtest"
)

// TestSandboxChannelOverride: a turn runs in the dispatcher's sandbox with
// its channel's override: with network allowlist the agent's curl of a host
// not allowed gets the proxy's refusal naming sandbox.allow_hosts; in a
// channel whose sandbox says network: open the refusal is open's (the
// host is on this machine's loopback), and the channel's allow_hosts lets
// it through.
func TestSandboxChannelOverride(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from the host") }))
	defer srv.Close()
	for _, tc := range []struct {
		name    string
		channel sandbox.Config
		want    string
	}{
		{"allowlist", sandbox.Config{}, "sandbox.allow_hosts"},
		{"open for the channel", sandbox.Config{Network: sandbox.Open}, "with sandbox.network: open"},
		{"open and allowed for the channel", sandbox.Config{Network: sandbox.Open, AllowHosts: []string{strings.TrimPrefix(srv.URL, "http://")}}, "hello from the host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, core.Limits{MaxLen: 4000}, func(o *core.Options) {
				o.Sandbox = sandboxtest.New(t, sandbox.Config{}, sandbox.Options{})
				o.Channels = map[string]core.Override{"rec:C1": {Sandbox: tc.channel}}
			})
			defer h.stop()
			h.say("alice", "!sh curl -sS -m 20 "+srv.URL+" > curl.txt 2>&1\ndone")
			h.rec.waitText("echo: done")
			b, err := os.ReadFile(filepath.Join(h.opts.Workspace, "curl.txt"))
			if err != nil || !strings.Contains(string(b), tc.want) {
				t.Errorf("the agent's curl printed %q (%v), want %q", b, err, tc.want)
			}
		})
	}
}
