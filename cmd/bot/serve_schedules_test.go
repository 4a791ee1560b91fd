package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/telegram/telegramtest"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/store"
)

// TestServeRunsDeclaredSchedules runs `bot serve` from a bot.yaml that
// declares a schedule (min_interval lowered, as for tests): the loop runs
// under the replica's leadership, the job is answered in its Telegram
// chat under its header, again at its next instant, and each run is
// recorded in the store that a restart reads. A schedule set in `bot run`'s
// terminal, due meanwhile, is left for the terminal.
func TestServeRunsDeclaredSchedules(t *testing.T) {
	tg := telegramtest.New(t, telegramtest.Options{})
	dir := t.TempDir()
	t.Setenv("GOLEM_TEST_TG_TOKEN", tg.Token())
	config := fmt.Sprintf(`
engine: claude-code
workspace: ./ws
store: ./data/golem.db
access:
  allow: ["telegram:42"]
engines:
  claude-code: {command: %q}
telegram: {token: "${GOLEM_TEST_TG_TOKEN}", api_url: %q}
http: {listen: ""}
schedules:
  min_interval: 1s
  jobs:
    - {id: pulse, conversation: "telegram::42", schedule: "@every 2s", prompt: "how is the build?", user: "42"}
`, enginetest.Build(t), tg.URL)
	path := filepath.Join(dir, "bot.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(dir, "data", "golem.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SaveSchedule(store.Schedule{ID: "term", Key: store.NewKey("console", "", "console", "console"), Platform: "console",
		Channel: "console", User: "console", Spec: "@every 1h", Prompt: "p", Created: time.Now().Add(-61 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	exited := make(chan int, 1)
	go func() { exited <- run(ctx, []string{"serve", "--config", path}, nil, &stderr, &stderr) }()
	tg.WaitUntil(t, 30*time.Second, "two runs of the job answered", func() bool {
		n := 0
		for _, m := range tg.BotMessages(42) {
			if strings.HasPrefix(m.Text, "⏰ pulse · ") && strings.HasSuffix(m.Text, "echo: how is the build?") {
				n++
			}
		}
		return n >= 2
	})
	cancel()
	select {
	case code := <-exited:
		if code != 0 {
			t.Fatalf("bot serve exited %d; log:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("bot serve did not stop; log:\n%s", stderr.String())
	}
	st, err = store.Open(filepath.Join(dir, "data", "golem.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if sc, _, err := st.Schedule("term"); err != nil || !sc.Fired.IsZero() || sc.LastOutcome != "" {
		t.Errorf("bot serve touched the terminal's schedule: %+v, %v", sc, err)
	}
	sc, found, err := st.Schedule("pulse")
	if err != nil || !found || !sc.Operator || sc.Fired.IsZero() || sc.LastRun.IsZero() {
		t.Errorf("the job's record after serve stopped: %+v, %t, %v", sc, found, err)
	}
}
