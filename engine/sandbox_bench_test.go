package engine_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/sandbox"
	"github.com/golem-chat/golem/sandbox/sandboxtest"
)

// BenchmarkSandboxTurnStart measures a turn's start: from Run being called
// to the fake CLI's process beginning (its log's started_ns), without a
// sandbox and in one with each network (with allowlist, golem's executable
// runs first in the sandbox, opens the proxy's port and becomes the CLI:
// package proxyport). Each iteration starts one turn of each kind, one
// after the other, so that a load that comes and goes on the machine
// weighs on all of them alike. It reports each kind's median and 90th
// percentile, and what each sandbox adds to the start without one: the
// median of the differences within an iteration (the issue bounds it for
// allowlist, ≤ 15 ms).
//
//	go test -run '^$' -bench SandboxTurnStart -benchtime 60x -count 3 ./engine/
func BenchmarkSandboxTurnStart(b *testing.B) {
	sandboxtest.Require(b)
	type kind struct {
		name    string
		network sandbox.Network // "" is no sandbox
		e       engine.Engine
		logPath string
		sb      *sandbox.Sandbox
		asked   []time.Time
	}
	kinds := []*kind{{name: "unsandboxed"}, {name: "none", network: sandbox.None}, {name: "allowlist", network: sandbox.Allowlist}}
	work := sandboxtest.Dir(b)
	for _, k := range kinds {
		logDir := sandboxtest.Dir(b)
		k.logPath = filepath.Join(logDir, "log")
		k.e, _ = fake(b, "claude-code", engine.Config{Env: map[string]string{"FAKE_AGENT_LOG": k.logPath}})
		if k.network != "" {
			k.sb = sandboxtest.New(b, sandbox.Config{Network: k.network, Writable: []string{logDir}}, sandbox.Options{})
		}
	}
	for b.Loop() {
		for _, k := range kinds {
			k.asked = append(k.asked, time.Now())
			r, err := k.e.Run(context.Background(), engine.Turn{Prompt: "hi", Workdir: work,
				Sandbox: k.sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: work})})
			if err != nil {
				b.Fatal(err)
			}
			for range r.Events() {
			}
			<-r.Exited()
		}
	}
	starts := map[string][]float64{}
	for _, k := range kinds {
		invs := enginetest.ReadLog(b, k.logPath)
		if len(invs) != len(k.asked) {
			b.Fatalf("%s: %d runs logged, %d asked", k.name, len(invs), len(k.asked))
		}
		for i, inv := range invs {
			starts[k.name] = append(starts[k.name], float64(time.Unix(0, inv.Started).Sub(k.asked[i]).Microseconds())/1000)
		}
	}
	pct := func(xs []float64, p int) float64 {
		xs = slices.Clone(xs)
		slices.Sort(xs)
		return xs[len(xs)*p/100]
	}
	for _, k := range kinds {
		b.ReportMetric(pct(starts[k.name], 50), k.name+"-median-ms")
		b.ReportMetric(pct(starts[k.name], 90), k.name+"-p90-ms")
		if k.network != "" {
			added := make([]float64, len(starts[k.name]))
			for i, s := range starts[k.name] {
				added[i] = s - starts["unsandboxed"][i]
			}
			b.ReportMetric(pct(added, 50), k.name+"-added-median-ms")
		}
	}
}

// BenchmarkSandboxRSS measures the memory a running sandboxed turn adds:
// the resident set (Pss, so that shared pages count once) of the processes
// between golem and the CLI (bwrap twice; with allowlist nothing more: what
// opened the proxy's port became the CLI), while the fake CLI sleeps. golem's own share (the turn's proxy) is a few
// goroutines and buffers, counted by the Go benchmarks' allocations.
//
//	go test -run '^$' -bench SandboxRSS -benchtime 10x ./engine/
func BenchmarkSandboxRSS(b *testing.B) {
	sandboxtest.Require(b)
	for _, network := range []sandbox.Network{sandbox.None, sandbox.Allowlist} {
		b.Run(string(network), func(b *testing.B) {
			e, logPath := fake(b, "claude-code", engine.Config{})
			work := sandboxtest.Dir(b)
			sb := sandboxtest.New(b, sandbox.Config{Network: network, Writable: []string{filepath.Dir(logPath)}}, sandbox.Options{})
			var total, totalRSS float64
			for b.Loop() {
				ctx, cancel := context.WithCancel(context.Background())
				started := make(chan engine.Group, 1)
				r, err := e.Run(ctx, engine.Turn{Prompt: "!sleep 30s", Workdir: work,
					Sandbox: sb.Turn(sandbox.Config{}, sandbox.Place{Workdir: work}), OnStart: func(g engine.Group) { started <- g }})
				if err != nil {
					b.Fatal(err)
				}
				g := <-started
				pss, rss, cli := 0, 0, false
				deadline := time.Now().Add(5 * time.Second)
				for !cli && time.Now().Before(deadline) { // until the CLI runs below bwrap
					pss, rss, cli = sandboxOverheadKB(g.ID)
					time.Sleep(5 * time.Millisecond) // nothing to wait on: another process's exec
				}
				if !cli {
					b.Fatal("the fake CLI never ran in the sandbox")
				}
				total += float64(pss) / 1024
				totalRSS += float64(rss) / 1024
				cancel()
				for range r.Events() {
				}
				<-r.Exited()
			}
			b.ReportMetric(total/float64(b.N), "added-Pss-MB/turn")
			b.ReportMetric(totalRSS/float64(b.N), "added-RSS-MB/turn")
		})
	}
}

// sandboxOverheadKB sums the Pss and the RSS (VmRSS: shared pages counted
// whole) of pid and its descendants that are not the fake CLI, and reports
// whether the CLI is among them yet.
func sandboxOverheadKB(pid int) (pss, rss int, cli bool) {
	for _, p := range tree(pid) {
		exe, _ := os.Readlink("/proc/" + strconv.Itoa(p) + "/exe")
		if strings.Contains(filepath.Base(exe), "fakeagent") {
			cli = true
			continue
		}
		pss += procField(p, "smaps_rollup", "Pss:")
		rss += procField(p, "status", "VmRSS:")
	}
	return pss, rss, cli
}

// procField reads a "Name: N kB" line of /proc/<pid>/<file>.
func procField(pid int, file, name string) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + file)
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if f := strings.Fields(string(line)); len(f) >= 2 && f[0] == name {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// tree returns pid and its descendants, from /proc.
func tree(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 {
			pp, _ := strconv.Atoi(f[1])
			children[pp] = append(children[pp], p)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}
