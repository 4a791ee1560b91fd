package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golem-chat/golem/engine/enginetest"
)

// The benchmarks in this file measure `bot serve` as a process of its own,
// the fake agent CLI (engine/enginetest) as Claude Code and the HTTP API as
// the platform, as a person would load it:
//
//	go test -run '^$' -bench 'Serve|Bare' -benchtime 1x ./cmd/bot/
//
// The bot's CPU time is read from /proc (Linux only), its children's not
// included. With GOLEM_TEST_BOT_CPUPROFILE=FILE in the environment the bot
// writes its CPU profile there (go tool pprof FILE; one benchmark at a
// time, since each bot started writes it). The fake agent's 0.5 ms spacing
// is a schedule: a line that comes late (the machine is loaded) is
// followed at once by the next that is due.

// loadBot is a `bot serve` under load.
type loadBot struct {
	base     string
	cmd      *exec.Cmd
	agentLog string
	agent    string // the fake agent's path
}

// startLoadBot starts `bot serve` with turns at once up to maxConcurrent
// and the repository's skills, as the default configuration has them.
func startLoadBot(b *testing.B, maxConcurrent int) *loadBot {
	b.Helper()
	return startLoadBotOn(b, maxConcurrent, "./data/golem.db")
}

// startLoadBotOn is startLoadBot with the store at storeAt.
func startLoadBotOn(b *testing.B, maxConcurrent int, storeAt string) *loadBot {
	b.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("needs /proc")
	}
	dir := b.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	skills, _ := filepath.Abs("../../skills")
	if os.Getenv("NOSKILLS") != "" {
		skills = ""
	}
	lb := &loadBot{base: "http://" + addr, agentLog: filepath.Join(dir, "agent.log"), agent: enginetest.Build(b)}
	config := fmt.Sprintf(`
engine: claude-code
workspace: ./ws
store: %s
skills: %q # SKILLSX
max_concurrent: %d
queue_depth: 5
log_level: warn
# These measure golem's own cost, comparable with the figures taken before
# the sandbox; engine's BenchmarkSandboxTurnStart measures what it adds.
sandbox: {mode: "off"}
engines:
  claude-code: {command: %q, env: {FAKE_AGENT_LOG: %q}}
slack: {bot_token: "", app_token: ""}
http: {listen: %q}
`, storeAt, skills, maxConcurrent, lb.agent, lb.agentLog, addr)
	path := filepath.Join(dir, "bot.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		b.Fatal(err)
	}
	lb.cmd = startServer(b, lb.base, botArgsEnv+"="+strings.Join([]string{"serve", "--config", path}, "\x1f"))
	return lb
}

// startServer starts the test binary again as a server with env added
// (`bot serve`, or bareServe) and waits for base/healthz to answer.
func startServer(b *testing.B, base string, env string) *exec.Cmd {
	var log syncBuffer
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), env)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if b.Failed() {
			b.Logf("server log:\n%s", log.String())
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		res, err := http.Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
			return cmd
		}
		if time.Now().After(deadline) {
			b.Fatalf("the server did not come up: %v\n%s", err, log.String())
		}
		time.Sleep(20 * time.Millisecond) // polling a port: nothing to wait on
	}
}

// botUsage is what the bot process has used so far.
type botUsage struct {
	cpu    time.Duration // the sum of its threads' run time
	queued time.Duration // and of their time runnable but waiting for a CPU
	wakes  int64         // times one of its threads was put on a CPU
	reads  int64         // read system calls (pipes and sockets)
	writes int64         // write system calls
}

func (u botUsage) sub(v botUsage) botUsage {
	return botUsage{u.cpu - v.cpu, u.queued - v.queued, u.wakes - v.wakes, u.reads - v.reads, u.writes - v.writes}
}

// usage reads the bot's threads' schedstat in /proc (exact run time,
// unlike the tick-sampled times in /proc/PID/stat; Go's threads do not
// exit) and its threads' system call counts.
func (lb *loadBot) usage(b *testing.B) botUsage {
	pid := lb.cmd.Process.Pid
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		b.Fatalf("read the bot's threads: %v", err)
	}
	var u botUsage
	for _, task := range tasks {
		raw, err := os.ReadFile(task)
		if err != nil {
			continue // a thread that just ended
		}
		f := strings.Fields(string(raw))
		ns, _ := strconv.ParseInt(f[0], 10, 64)
		queued, _ := strconv.ParseInt(f[1], 10, 64)
		slices, _ := strconv.ParseInt(f[2], 10, 64)
		u.cpu += time.Duration(ns)
		u.queued += time.Duration(queued)
		u.wakes += slices
	}
	// Per thread: the process's own counts include its reaped children's
	// (the fake agents' writes).
	ios, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/io", pid))
	for _, path := range ios {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(raw), "\n") {
			k, v, _ := strings.Cut(line, ": ")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "syscr":
				u.reads += n
			case "syscw":
				u.writes += n
			}
		}
	}
	return u
}

// chatResult is what the client saw of one chat.
type chatResult struct {
	sent      time.Time // the request was sent
	firstText time.Time // the first text event arrived
	stamps    []int64   // the "stamp:<ns>" texts, in order
	closed    time.Time // the stream ended (EOF)
	terminal  string    // the terminal event's type
	bytes     int
}

// chat posts text to conversation and reads the stream to its end.
func (lb *loadBot) chat(b *testing.B, conversation, text string) chatResult {
	body := fmt.Sprintf(`{"conversation":%q,"text":%q}`, conversation, text)
	req, _ := http.NewRequest(http.MethodPost, lb.base+"/v1/chat", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	var r chatResult
	r.sent = time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Error(err)
		return r
	}
	defer res.Body.Close()
	br := bufio.NewReaderSize(res.Body, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		r.bytes += len(line)
		if p, ok := bytes.CutPrefix(line, []byte(`data: {"type":"text","content":"`)); ok {
			if r.firstText.IsZero() {
				r.firstText = time.Now()
			}
			if s, ok := bytes.CutPrefix(p, []byte("stamp:")); ok {
				ns, _ := strconv.ParseInt(string(bytes.TrimRight(s, "\"}\n")), 10, 64)
				r.stamps = append(r.stamps, ns)
			}
		} else if p, ok := bytes.CutPrefix(line, []byte(`data: {"type":"`)); ok {
			typ, _, _ := bytes.Cut(p, []byte(`"`))
			if string(typ) == "done" || string(typ) == "error" {
				r.terminal = string(typ)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			b.Error(err)
			return r
		}
	}
	r.closed = time.Now()
	if r.terminal != "done" {
		b.Errorf("chat %s ended with %q, not done", conversation, r.terminal)
	}
	return r
}

// cliOutput returns the bytes and lines the fake agent prints for prompt
// as golem runs it, measured by running it once directly.
func cliOutput(b *testing.B, agent, prompt string) (size, lines int) {
	out, err := exec.Command(agent, "-p", prompt, "--output-format", "stream-json", "--verbose",
		"--include-partial-messages").Output()
	if err != nil {
		b.Fatal(err)
	}
	return len(out), bytes.Count(out, []byte("\n"))
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkServeStreamCPU streams an answer of 20,000 lines printed 0.5 ms
// apart through `bot serve` (sequential chats) and reports the bot's CPU
// seconds per MB of CLI output; its wake-ups (a thread put on a CPU),
// read and write system calls per line of CLI output; the lines' actual
// spacing; and the first text's latency: from the CLI printing it (a
// stamp in the text) to the client reading it, and from the request.
func BenchmarkServeStreamCPU(b *testing.B) {
	streamCPU(b, startLoadBot(b, 8))
}

// streamCPU is BenchmarkServeStreamCPU against lb.
func streamCPU(b *testing.B, lb *loadBot) {
	const prompt = "!stamp\n!delta-rate 500us 20000"
	size, lines := cliOutput(b, lb.agent, strings.Replace(prompt, "500us", "0s", 1)) // the same lines, at once
	lb.chat(b, "warm", "hello")                                                      // the store, the skills, the first process
	var first, request []time.Duration
	var streaming time.Duration
	n := 0
	before := lb.usage(b)
	for b.Loop() {
		r := lb.chat(b, "c"+strconv.Itoa(n), prompt)
		n++
		streaming += r.closed.Sub(r.sent)
		if len(r.stamps) > 0 {
			first = append(first, r.firstText.Sub(time.Unix(0, r.stamps[0])))
		}
		request = append(request, r.firstText.Sub(r.sent))
	}
	u := lb.usage(b).sub(before)
	b.ReportMetric(u.cpu.Seconds()/(float64(n*size)/1e6), "cpu-s/MB")
	perLine := func(v int64) float64 { return float64(v) / float64(n*lines) }
	b.ReportMetric(perLine(u.wakes), "wakes/line")
	b.ReportMetric(perLine(u.reads), "reads/line")
	b.ReportMetric(perLine(u.writes), "writes/line")
	// The lines' real spacing: 500 unless the machine was too loaded for
	// the fake to keep to its schedule.
	b.ReportMetric(float64(streaming.Microseconds())/float64(n*lines), "us/line")
	b.ReportMetric(ms(median(first)), "stamp-to-client-ms")
	b.ReportMetric(ms(median(request)), "request-to-text-ms")
}

// BenchmarkServeResultToClose measures, through `bot serve`, the time from
// the CLI printing its result line (the stamp printed just before it) to
// the client seeing the stream end, one chat at a time and 20 at once. The
// fake stays alive 20 ms after its result, as Claude Code does while it
// writes its session file.
func BenchmarkServeResultToClose(b *testing.B) {
	for _, conc := range []int{1, 20} {
		b.Run("chats="+strconv.Itoa(conc), func(b *testing.B) {
			resultToClose(b, startLoadBot(b, conc), conc)
		})
	}
}

// resultToClose is BenchmarkServeResultToClose against lb with conc chats
// at once.
func resultToClose(b *testing.B, lb *loadBot, conc int) {
	const prompt = "!text 2000\n!stamp\n!linger 20ms"
	lb.chat(b, "warm", "hello")
	var lat []time.Duration
	var mu sync.Mutex
	round := 0
	before := lb.usage(b)
	for b.Loop() {
		var wg sync.WaitGroup
		for i := range conc {
			wg.Go(func() {
				r := lb.chat(b, fmt.Sprintf("r%d-%d", round, i), prompt)
				if len(r.stamps) > 0 {
					mu.Lock()
					lat = append(lat, r.closed.Sub(time.Unix(0, r.stamps[len(r.stamps)-1])))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		round++
	}
	u := lb.usage(b).sub(before)
	b.ReportMetric(ms(median(lat)), "result-to-close-ms")
	// How much the server's threads waited for a CPU, per chat: what the
	// machine's load costs it.
	b.ReportMetric(ms(u.queued)/float64(round*conc), "queued-ms/chat")
	b.ReportMetric(ms(u.cpu)/float64(round*conc), "cpu-ms/chat")
}

// BenchmarkServeNextTurn measures, through `bot serve`, request → first
// text of a conversation's next turn sent the moment its previous answer
// ended, while that turn's fake CLI still lingers 20 ms after its result
// (as Claude Code does while it writes its session file), against the
// same in a new conversation: the next turn prepares meanwhile and waits
// only to spawn.
func BenchmarkServeNextTurn(b *testing.B) {
	lb := startLoadBot(b, 4)
	lb.chat(b, "warm", "hello")
	const prompt = "!linger 20ms\nhi"
	var next, fresh []time.Duration
	round := 0
	for b.Loop() {
		conv := fmt.Sprintf("next-%d", round)
		r := lb.chat(b, conv, prompt)
		fresh = append(fresh, r.firstText.Sub(r.sent))
		r = lb.chat(b, conv, prompt)
		next = append(next, r.firstText.Sub(r.sent))
		round++
	}
	b.ReportMetric(ms(median(next)), "next-turn-text-ms")
	b.ReportMetric(ms(median(fresh)), "new-conversation-text-ms")
}

// BenchmarkServeTurnStart sends n chats at once to `bot serve`
// (max_concurrent n) and reports the median and the slowest time from a
// request to its CLI having started (the fake logs when it began);
// BenchmarkBareSpawn is the floor for the same n, BenchmarkBareServe the
// floor with the HTTP request in it.
func BenchmarkServeTurnStart(b *testing.B) {
	for _, n := range []int{100, 200} {
		b.Run("chats="+strconv.Itoa(n), func(b *testing.B) {
			lb := startLoadBot(b, n)
			lb.chat(b, "warm", "hello")
			reportTurnStarts(b, lb, n)
		})
	}
}

// BenchmarkBareServe is BenchmarkServeTurnStart against the least an HTTP
// server can do (bareServe): the floor that counts the request as well as
// the spawn.
func BenchmarkBareServe(b *testing.B) {
	agent := enginetest.Build(b)
	for _, n := range []int{100, 200} {
		b.Run("chats="+strconv.Itoa(n), func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			lb := &loadBot{base: "http://" + addr, agentLog: filepath.Join(b.TempDir(), "agent.log"), agent: agent}
			lb.cmd = startServer(b, lb.base, bareServeEnv+"="+strings.Join([]string{addr, agent, lb.agentLog}, "\x1f"))
			lb.chat(b, "warm", "hello")
			reportTurnStarts(b, lb, n)
		})
	}
}

// reportTurnStarts sends n chats at once to lb per round and reports the
// median and the slowest time from a request to its CLI having started.
func reportTurnStarts(b *testing.B, lb *loadBot, n int) {
	var lat []time.Duration
	round := 0
	for b.Loop() {
		sent := make(map[string]time.Time, n)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range n {
			id := fmt.Sprintf("turn-%d-%d", round, i)
			wg.Go(func() {
				r := lb.chat(b, id, id)
				mu.Lock()
				sent[id] = r.sent
				mu.Unlock()
			})
		}
		wg.Wait()
		round++
		lat = append(lat, startLatencies(b, lb.agentLog, sent)...)
		os.Remove(lb.agentLog)
	}
	b.ReportMetric(ms(median(lat)), "median-ms")
	b.ReportMetric(ms(slices.Max(lat)), "max-ms")
}

// BenchmarkBareSpawn starts the fake agent n times at once from plain Go
// (os/exec, stdout read to its end): the floor for BenchmarkServeTurnStart.
// Like the n requests there, the n spawns are asked for at one moment, and
// median-ms is the time from that moment to each process having started,
// so the floor counts the spawns' wait for each other as the bot's figure
// does; own-median-ms starts each clock only when its own exec is called.
func BenchmarkBareSpawn(b *testing.B) {
	agent := enginetest.Build(b)
	for _, n := range []int{100, 200} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			log := filepath.Join(b.TempDir(), "agent.log")
			var lat, own []time.Duration
			round := 0
			for b.Loop() {
				burst := make(map[string]time.Time, n)
				called := make(map[string]time.Time, n)
				var mu sync.Mutex
				var wg sync.WaitGroup
				asked := time.Now()
				for i := range n {
					id := fmt.Sprintf("turn-%d-%d", round, i)
					burst[id] = asked
					wg.Go(func() {
						cmd := exec.Command(agent, "-p", id, "--output-format", "stream-json", "--verbose", "--include-partial-messages")
						cmd.Env = append(os.Environ(), "FAKE_AGENT_LOG="+log)
						cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
						mu.Lock()
						called[id] = time.Now()
						mu.Unlock()
						if _, err := cmd.Output(); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
				round++
				lat = append(lat, startLatencies(b, log, burst)...)
				own = append(own, startLatencies(b, log, called)...)
				os.Remove(log)
			}
			b.ReportMetric(ms(median(lat)), "median-ms")
			b.ReportMetric(ms(slices.Max(lat)), "max-ms")
			b.ReportMetric(ms(median(own)), "own-median-ms")
		})
	}
}

// startLatencies matches the fake agent's invocations to the times their
// prompts were sent.
func startLatencies(b *testing.B, log string, sent map[string]time.Time) []time.Duration {
	var out []time.Duration
	for _, inv := range enginetest.ReadLog(b, log) {
		at, ok := sent[inv.Prompt]
		if !ok {
			continue
		}
		out = append(out, time.Unix(0, inv.Started).Sub(at))
	}
	if len(out) != len(sent) {
		b.Fatalf("%d of %d agents logged their start", len(out), len(sent))
	}
	return out
}
