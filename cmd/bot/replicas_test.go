package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/slack/slacktest"
	"github.com/golem-chat/golem/adapters/telegram/telegramtest"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/internal/nettest"
)

// fleet is three `bot serve` processes sharing one etcd (each through a
// proxy of its own, to cut it off) and one workspace, against the Slack
// and Telegram fakes, with the fake agent logging every run.
type fleet struct {
	t        *testing.T
	sl       *slacktest.Server
	tg       *telegramtest.Server
	agentLog string
	reps     []*replica
}

type replica struct {
	name  string
	cfg   string
	proxy *nettest.Proxy
	log   *syncBuffer
	pid   int
	dead  bool
}

const fleetTTL = 2 * time.Second

func newFleet(t *testing.T, n int) *fleet {
	etcd := etcdtest.Start(t, 1)
	f := &fleet{t: t, sl: slacktest.New(slacktest.Options{}), tg: telegramtest.New(t, telegramtest.Options{})}
	t.Cleanup(f.sl.Close)
	dir := t.TempDir()
	f.agentLog = filepath.Join(dir, "agent.log")
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	agent := enginetest.Build(t)
	for i := range n {
		r := &replica{name: fmt.Sprintf("r%d", i+1), proxy: nettest.NewProxy(t, etcd.Endpoints[0]), log: &syncBuffer{}}
		home := filepath.Join(dir, r.name)
		if err := os.MkdirAll(home, 0o755); err != nil {
			t.Fatal(err)
		}
		config := fmt.Sprintf(`
engine: claude-code
busy: queue # each message a turn of its own, whatever the machine's speed
log_level: debug
workspace: %q
store: etcd://%s/golem
replica: %s
replica_ttl: %s
skills: ""
access:
  allow: ["slack:U1", "telegram:42", "telegram:43"]
sandbox: {writable: [%q]} # the fake agent's log
engines:
  claude-code: {command: %q, env: {FAKE_AGENT_LOG: %q, GOLEM_TEST_REPLICA: %s}}
slack: {bot_token: %q, app_token: %q, api_url: %q}
telegram: {token: %q, api_url: %q}
http: {listen: ""}
`, ws, r.proxy.Addr, r.name, fleetTTL, dir, agent, f.agentLog, r.name,
			slacktest.BotToken, slacktest.AppToken, f.sl.URL, f.tg.Token(), f.tg.URL)
		r.cfg = filepath.Join(home, "bot.yaml")
		if err := os.WriteFile(r.cfg, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		r.pid = startBot(t, r.log, "serve", "--config", r.cfg).Process.Pid
		f.reps = append(f.reps, r)
	}
	if !f.sl.Wait(60*time.Second, func() bool { return f.sl.Open() == n }) {
		t.Fatalf("%d of %d replicas connected to Slack; logs:\n%s", f.sl.Open(), n, f.logs())
	}
	return f
}

func (f *fleet) logs() string {
	var b strings.Builder
	for _, r := range f.reps {
		fmt.Fprintf(&b, "--- %s\n%s", r.name, r.log.String())
	}
	return b.String()
}

func (f *fleet) replicaNamed(name string) *replica {
	for _, r := range f.reps {
		if r.name == name {
			return r
		}
	}
	f.t.Fatalf("no replica %q", name)
	return nil
}

// runs are the agent's runs whose prompt holds label, oldest first.
func (f *fleet) runs(label string) []enginetest.Invocation {
	var out []enginetest.Invocation
	for _, inv := range enginetest.ReadLog(f.t, f.agentLog) {
		if strings.Contains(inv.Prompt, label) {
			out = append(out, inv)
		}
	}
	slices.SortFunc(out, func(a, b enginetest.Invocation) int { return int(a.Started - b.Started) })
	return out
}

// waitRun waits for the agent's run of label and returns it.
func (f *fleet) waitRun(label string) enginetest.Invocation {
	f.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if runs := f.runs(label); len(runs) > 0 {
			return runs[0]
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.t.Fatalf("the agent never ran %q; logs:\n%s", label, f.logs())
	return enginetest.Invocation{}
}

// place is a conversation of the test: a Slack channel or a Telegram chat.
type place struct {
	name string
	send func(text string)
	bot  func() []string // the bot's messages there
}

func (f *fleet) places() []place {
	var ps []place
	for _, ch := range []string{"C1", "C2", "C3", "C4"} {
		ps = append(ps, place{name: ch,
			send: func(text string) {
				if _, err := f.sl.Deliver(slacktest.Event{User: "U1", Channel: ch, Text: "<@" + slacktest.BotUserID + "> " + text}); err != nil {
					f.t.Fatal(err)
				}
			},
			bot: func() (out []string) {
				for _, m := range f.sl.BotMessages(ch) {
					out = append(out, m.Text)
				}
				return out
			}})
	}
	for _, u := range []telegramtest.User{{ID: 42, FirstName: "Ada"}, {ID: 43, FirstName: "Bob"}} {
		ps = append(ps, place{name: "T" + strconv.FormatInt(u.ID, 10),
			send: func(text string) { f.tg.PushPrivate(u, text) },
			bot: func() (out []string) {
				for _, m := range f.tg.BotMessages(u.ID) {
					out = append(out, m.Text)
				}
				return out
			}})
	}
	return ps
}

// count is how many of msgs hold substr, each once at most.
func count(msgs []string, substr string) int {
	n := 0
	for _, m := range msgs {
		n += strings.Count(m, substr)
	}
	return n
}

// eventually polls cond until it holds or d has passed: the conditions
// here look at both fakes, and neither wakes a wait on the other.
func eventually(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

var stampRE = regexp.MustCompile(`stamp:(\d+)`)

// TestReplicasShareTheConversations is golem on three machines: 30
// messages in 6 conversations (4 Slack channels, 2 Telegram chats), sent
// 120 ms apart per conversation, each answered once, in order, no two
// turns of one conversation at once, each conversation in one agent
// session across the replicas that ran it. Then the replica running a
// turn is killed (SIGKILL), and another is cut off from etcd: in both
// cases another replica says the turn was interrupted, runs the message
// that waited behind it in the same session, and nothing is answered
// twice.
func TestReplicasShareTheConversations(t *testing.T) {
	if testing.Short() {
		t.Skip("three bot processes and an etcd")
	}
	f := newFleet(t, 3)
	if path := os.Getenv("GOLEM_TEST_FLEET_LOGS"); path != "" {
		t.Cleanup(func() { _ = os.WriteFile(path, []byte(f.logs()), 0o644) })
	}
	ps := f.places()
	began := time.Now()
	const rounds = 5
	for m := range rounds {
		for _, p := range ps {
			p.send(fmt.Sprintf("%s m%d\n!sleep 100ms\n!stamp", p.name, m))
			time.Sleep(20 * time.Millisecond)
		}
	}
	answered := func() bool {
		for _, p := range ps {
			for m := range rounds {
				if count(p.bot(), fmt.Sprintf("echo: %s m%d", p.name, m)) == 0 {
					return false
				}
			}
		}
		return true
	}
	if !eventually(90*time.Second, answered) {
		t.Fatalf("not every message was answered; logs:\n%s", f.logs())
	}
	t.Logf("30 messages in 6 conversations answered %v after the first was sent", time.Since(began).Round(10*time.Millisecond))
	ran := map[string]bool{}
	for _, p := range ps {
		bot := p.bot()
		runs := f.runs(p.name + " m")
		if len(runs) != rounds {
			t.Errorf("%s: the agent ran %d times, want %d", p.name, len(runs), rounds)
			continue
		}
		var story strings.Builder // which replica ran what when, for a failure
		for _, inv := range runs {
			fmt.Fprintf(&story, "\n  %s at %s: %q", inv.Env["GOLEM_TEST_REPLICA"], time.Unix(0, inv.Started).Format("15:04:05.000"), inv.Prompt)
		}
		failed := t.Failed()
		defer func() {
			if t.Failed() && !failed {
				t.Logf("%s's runs:%s", p.name, story.String())
			}
		}()
		for m, inv := range runs {
			label := fmt.Sprintf("%s m%d", p.name, m)
			ran[inv.Env["GOLEM_TEST_REPLICA"]] = true
			if n := count(bot, "echo: "+label); n != 1 {
				t.Errorf("%s answered %d times", label, n)
			}
			if !strings.Contains(inv.Prompt, label) {
				t.Errorf("%s: run %d was %q: out of order", p.name, m, inv.Prompt)
			}
			if m == 0 {
				continue
			}
			prev := runs[m-1]
			if resumed, _ := inv.Flag("--resume"); resumed != prev.SessionID {
				t.Errorf("%s resumed %q, want the session %q of the run before", label, resumed, prev.SessionID)
			}
			// The run before wrote its stamp late in its turn: this one began after.
			for _, text := range bot {
				if s := stampRE.FindStringSubmatch(text); s != nil && strings.Contains(text, fmt.Sprintf("echo: %s m%d", p.name, m-1)) {
					if ns, _ := strconv.ParseInt(s[1], 10, 64); inv.Started < ns {
						t.Errorf("%s began %v before the run before it ended", label, time.Duration(ns-inv.Started))
					}
				}
			}
		}
	}
	if len(ran) < 2 {
		t.Errorf("every turn ran on %v: the replicas did not share the conversations", ran)
	}
	t.Logf("turns ran on %d replicas", len(ran))

	// A replica killed mid-turn.
	c1 := ps[0]
	c1.send("C1 long\n!text 10\n!hang")
	long := f.waitRun("C1 long")
	c1.send("C1 after-kill")
	victim := f.replicaNamed(long.Env["GOLEM_TEST_REPLICA"])
	if err := syscall.Kill(victim.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	victim.dead = true
	killed := time.Now()
	if !eventually(fleetTTL+30*time.Second, func() bool { return count(c1.bot(), "echo: C1 after-kill") > 0 }) {
		t.Fatalf("the message behind the killed turn was not answered; logs:\n%s", f.logs())
	}
	t.Logf("killed %s mid-turn: the next message answered %v later", victim.name, time.Since(killed).Round(10*time.Millisecond))
	if n := count(c1.bot(), "restarted while answering"); n != 1 {
		t.Errorf("%d interrupted notices in C1, want 1", n)
	}
	after := f.waitRun("C1 after-kill")
	if resumed, _ := after.Flag("--resume"); resumed != long.SessionID {
		t.Errorf("after the kill C1 resumed %q, want the killed turn's session %q", resumed, long.SessionID)
	}

	// A replica cut off from etcd mid-turn.
	var c2 place
	var cutRun enginetest.Invocation
	for _, p := range ps[1:] {
		p.send(p.name + " stuck\n!text 10\n!hang")
		inv := f.waitRun(p.name + " stuck")
		if inv.Env["GOLEM_TEST_REPLICA"] != victim.name {
			c2, cutRun = p, inv
			break
		}
	}
	if c2.name == "" {
		t.Fatal("no turn ran on a live replica")
	}
	c2.send(c2.name + " after-cut")
	cutOff := f.replicaNamed(cutRun.Env["GOLEM_TEST_REPLICA"])
	cutOff.proxy.Cut()
	cut := time.Now()
	if !eventually(fleetTTL+30*time.Second, func() bool { return count(c2.bot(), "echo: "+c2.name+" after-cut") > 0 }) {
		t.Fatalf("the message behind the cut-off turn was not answered; logs:\n%s", f.logs())
	}
	t.Logf("cut %s off mid-turn: the next message answered %v later", cutOff.name, time.Since(cut).Round(10*time.Millisecond))
	if n := count(c2.bot(), "restarted while answering"); n != 1 {
		t.Errorf("%d interrupted notices in %s, want 1", n, c2.name)
	}
	afterCut := f.waitRun(c2.name + " after-cut")
	if resumed, _ := afterCut.Flag("--resume"); resumed != cutRun.SessionID {
		t.Errorf("after the cut %s resumed %q, want the cut-off turn's session %q", c2.name, resumed, cutRun.SessionID)
	}
	if afterCut.Env["GOLEM_TEST_REPLICA"] == cutOff.name {
		t.Errorf("the cut-off replica ran %s after-cut", c2.name)
	}
	cutOff.proxy.Heal()
	if !f.sl.Wait(30*time.Second, func() bool { return f.sl.Open() == 2 }) {
		t.Errorf("%d Slack connections after the heal, want the two live replicas'", f.sl.Open())
	}
	c2.send(c2.name + " healed")
	if !eventually(30*time.Second, func() bool { return count(c2.bot(), "echo: "+c2.name+" healed") > 0 }) {
		t.Fatalf("no answer after the heal; logs:\n%s", f.logs())
	}
	for _, p := range ps {
		for _, text := range p.bot() {
			if strings.Count(text, "echo:") > 1 {
				t.Errorf("%s: one message holds two answers: %q", p.name, text)
			}
		}
	}
	if n := len(f.runs(c2.name + " after-cut")); n != 1 {
		t.Errorf("%s after-cut ran %d times, want once", c2.name, n)
	}
}

// BenchmarkIdleReplicaRSS is the resident memory of an idle replica: the
// bot built as it ships, serving with an etcd store, connected to the Slack and
// Telegram fakes, five seconds after it started (rss-MB, from
// /proc/PID/status). Run it without -race: go test -run '^$' -bench
// IdleReplicaRSS -benchtime 1x ./cmd/bot/
func BenchmarkIdleReplicaRSS(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		rss := idleReplicaRSS(b)
		b.ReportMetric(float64(rss)/(1<<20), "rss-MB")
		b.StartTimer()
	}
}

func idleReplicaRSS(b *testing.B) int64 {
	etcd := etcdtest.Start(b, 1)
	sl := slacktest.New(slacktest.Options{})
	b.Cleanup(sl.Close)
	tg := telegramtest.New(b, telegramtest.Options{})
	dir := b.TempDir()
	config := fmt.Sprintf(`
workspace: ./ws
store: %s
replica: idle
skills: ""
slack: {bot_token: %q, app_token: %q, api_url: %q}
telegram: {token: %q, api_url: %q}
http: {listen: ""}
`, etcd.URL("golem"), slacktest.BotToken, slacktest.AppToken, sl.URL, tg.Token(), tg.URL)
	path := filepath.Join(dir, "bot.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		b.Fatal(err)
	}
	// The bot itself, not this test binary, which links the embedded etcd
	// server and the fakes in.
	bin := filepath.Join(dir, "bot")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	var log syncBuffer
	cmd := exec.Command(bin, "serve", "--config", path)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if !sl.Wait(30*time.Second, func() bool { return sl.Open() == 1 }) {
		b.Fatalf("the replica did not connect; log:\n%s", log.String())
	}
	time.Sleep(5 * time.Second)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
