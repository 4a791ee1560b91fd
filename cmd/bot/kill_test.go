package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/slack/slacktest"
	"github.com/golem-chat/golem/adapters/telegram/telegramtest"
	"github.com/golem-chat/golem/engine/enginetest"
)

// botArgsEnv makes the test binary run the bot's main with these
// arguments (separated by \x1f) instead of the tests, so that a test can
// start the real bot as a process of its own and kill it.
const botArgsEnv = "GOLEM_TEST_BOT_ARGS"

// botProfileEnv, with botArgsEnv, names a file the bot so started writes
// its CPU profile to (go tool pprof FILE), from its start to its exit.
const botProfileEnv = "GOLEM_TEST_BOT_CPUPROFILE"

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(botArgsEnv); ok {
		os.Args = append(os.Args[:1], strings.Split(args, "\x1f")...)
		os.Exit(profiled(os.Getenv(botProfileEnv), botMain))
	}
	if spec, ok := os.LookupEnv(bareServeEnv); ok {
		bareServe(spec)
		return
	}
	if spec, ok := os.LookupEnv(bareStreamEnv); ok {
		os.Exit(serveBareStream(spec))
	}
	os.Exit(m.Run())
}

// profiled runs main, writing a CPU profile to path unless it is empty.
func profiled(path string, main func() int) int {
	if path == "" {
		return main()
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bot: cpu profile:", err)
		return 1
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "bot: cpu profile:", err)
		return 1
	}
	defer pprof.StopCPUProfile()
	return main()
}

// startBot starts `bot ARGS...` as a process of its own; its log goes to
// log.
func startBot(t *testing.T, log *syncBuffer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), botArgsEnv+"="+strings.Join(args, "\x1f"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

// running reports whether pid is a live (not zombie) process.
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, after, _ := bytes.Cut(b, []byte(") "))
	return !bytes.HasPrefix(after, []byte("Z"))
}

// TestHardKilledBotStopsItsAgentsAtTheNextStart: golem killed outright
// (SIGKILL) takes its agent with it, but the agent's child lives on in the
// agent's process group; the next start stops it before it posts the
// "interrupted" notice.
func TestHardKilledBotStopsItsAgentsAtTheNextStart(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finding a left agent again needs /proc")
	}
	tg := telegramtest.New(t, telegramtest.Options{})
	dir := t.TempDir()
	agentLog := filepath.Join(dir, "agent.log")
	config := fmt.Sprintf(`
engine: claude-code
workspace: ./ws
store: ./data/golem.db
skills: ""
access:
  allow: ["telegram:42"]
# What this test stops is an agent left unsandboxed; a sandboxed one dies
# with golem (bwrap --die-with-parent), and its child's pid is the
# sandbox's own.
sandbox: {mode: "off"}
engines:
  claude-code: {command: %q, env: {FAKE_AGENT_LOG: %q}}
telegram: {token: %q, api_url: %q}
slack: {bot_token: "", app_token: ""}
http: {listen: ""}
`, enginetest.Build(t), agentLog, tg.Token(), tg.URL)
	path := filepath.Join(dir, "bot.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ada := telegramtest.User{ID: 42, FirstName: "Ada"}

	var log1 syncBuffer
	first := startBot(t, &log1, "serve", "--config", path)
	tg.PushPrivate(ada, "!text 10\n!hang")
	var inv enginetest.Invocation
	tg.WaitUntil(t, 30*time.Second, "the partial answer and the agent's child", func() bool {
		if invs := enginetest.ReadLog(t, agentLog); len(invs) == 1 {
			inv = invs[0]
		}
		return inv.ChildPID != 0 && hasText(tg.BotMessages(42), "the quick")
	})
	t.Cleanup(func() { // whatever happens, leave nothing running
		syscall.Kill(-inv.PID, syscall.SIGKILL)
		syscall.Kill(inv.ChildPID, syscall.SIGKILL)
	})

	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	// The agent dies with golem (PR_SET_PDEATHSIG), so that no replica
	// taking its conversation over runs beside it; its child, in its
	// process group, outlives it.
	gone := time.Now().Add(10 * time.Second)
	for running(inv.PID) && time.Now().Before(gone) {
		time.Sleep(10 * time.Millisecond)
	}
	if running(inv.PID) {
		t.Errorf("the agent (%d) outlived golem killed outright", inv.PID)
	}
	if !running(inv.ChildPID) {
		t.Fatalf("after SIGKILL of golem the agent's child is not running: nothing left to test; log:\n%s", log1.String())
	}

	var log2 syncBuffer
	second := startBot(t, &log2, "serve", "--config", path)
	tg.WaitUntil(t, 30*time.Second, "the interrupted notice", func() bool {
		return hasText(tg.BotMessages(42), "restarted while answering")
	})
	// Stopped before the notice was posted, not eventually.
	if running(inv.PID) || running(inv.ChildPID) {
		t.Errorf("after the restart the agent (%v) or its child (%v) still runs; log:\n%s",
			running(inv.PID), running(inv.ChildPID), log2.String())
	}
	if !strings.Contains(log2.String(), "stopped an agent that the last run of golem left running") {
		t.Errorf("the restart did not log the agent it stopped:\n%s", log2.String())
	}

	if err := second.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- second.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the restarted bot exited with %v; log:\n%s", err, log2.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the restarted bot did not stop; log:\n%s", log2.String())
	}
	if n := len(enginetest.ReadLog(t, agentLog)); n != 1 {
		t.Errorf("the agent ran %d times, want once (the interrupted message must not run again)", n)
	}
}

// TestHardKilledBotLosesNoSlackMessage: golem killed outright (SIGKILL)
// while a Slack message's file is still being fetched, after its envelope
// was acked (Slack never sends it again): the next start hands the message
// on from the store, fetches the file again and answers it, once.
func TestHardKilledBotLosesNoSlackMessage(t *testing.T) {
	sl := slacktest.New(slacktest.Options{})
	t.Cleanup(sl.Close)
	dir := t.TempDir()
	agentLog := filepath.Join(dir, "agent.log")
	config := fmt.Sprintf(`
engine: claude-code
workspace: ./ws
store: ./data/golem.db
skills: ""
access:
  allow: ["slack:U1"]
sandbox: {writable: [%q]} # the fake agent's log
engines:
  claude-code: {command: %q, env: {FAKE_AGENT_LOG: %q}}
slack: {bot_token: %q, app_token: %q, api_url: %q}
http: {listen: ""}
`, dir, enginetest.Build(t), agentLog, slacktest.BotToken, slacktest.AppToken, sl.URL)
	path := filepath.Join(dir, "bot.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}

	var log1 syncBuffer
	first := startBot(t, &log1, "serve", "--config", path)
	if !sl.Wait(30*time.Second, func() bool { return sl.Open() == 1 }) {
		t.Fatalf("golem did not connect to Slack; log:\n%s", log1.String())
	}
	f := sl.AddFile("notes.txt", "text/plain", []byte("the notes"))
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	sl.Fail("files.info", 1, slacktest.Failure{Until: hold}) // the event names the file only: golem asks files.info
	d, err := sl.Deliver(slacktest.Event{Type: "message", ChannelType: "im", SubType: "file_share", User: "U1", Channel: "D1",
		Text: "see the file", Files: []map[string]any{{"id": f["id"], "file_access": "check_file_info"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !sl.Wait(30*time.Second, func() bool { _, acked := sl.Acked(d.EnvelopeID); return acked && sl.Holding("files.info") == 1 }) {
		t.Fatalf("the envelope was not acked with files.info held; log:\n%s", log1.String())
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()

	var log2 syncBuffer
	second := startBot(t, &log2, "serve", "--config", path)
	answered := func() int {
		n := 0
		for _, m := range sl.BotMessages("D1") {
			n += strings.Count(m.Text, "echo: see the file")
		}
		return n
	}
	if !sl.Wait(30*time.Second, func() bool { return answered() > 0 }) {
		t.Fatalf("the message was not answered after the restart; log:\n%s", log2.String())
	}
	if err := second.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.Wait(); err != nil {
		t.Errorf("the restarted bot exited with %v; log:\n%s", err, log2.String())
	}
	invs := enginetest.ReadLog(t, agentLog)
	if len(invs) != 1 || !strings.Contains(invs[0].Prompt, "notes.txt") {
		t.Errorf("the agent ran %d times (%+v), want once, with the file", len(invs), invs)
	}
	if n := answered(); n != 1 {
		t.Errorf("the message was answered %d times, want once", n)
	}
	if n := sl.Downloads(f["id"].(string)); n != 1 {
		t.Errorf("the file was downloaded %d times, want once", n)
	}
}
