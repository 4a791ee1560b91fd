package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/telegram/telegramtest"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine/enginetest"
)

// syncBuffer is a bytes.Buffer safe for the logger and the test at once.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // receives (without blocking) after each write, once made by changed
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		select {
		case s.written <- struct{}{}:
		default:
		}
	}
	return s.b.Write(p)
}

// changed receives after each write from now on.
func (s *syncBuffer) changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written == nil {
		s.written = make(chan struct{}, 1)
	}
	return s.written
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeFromConfig runs `bot serve` as the README says, from a bot.yaml
// naming a (fake) Telegram and the fake agent CLI, and chats through it:
// the config reaches the adapters, the engine and the allowlist, and
// SIGINT (ctx) shuts it down cleanly.
func TestServeFromConfig(t *testing.T) {
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
slack: {bot_token: "", app_token: ""}
http: {listen: ""}
`, enginetest.Build(t), tg.URL)
	path := filepath.Join(dir, "bot.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	exited := make(chan int, 1)
	go func() { exited <- run(ctx, []string{"serve", "--config", path}, nil, &stderr, &stderr) }()

	tg.PushPrivate(telegramtest.User{ID: 42, FirstName: "Ada"}, "hello golem")
	tg.PushPrivate(telegramtest.User{ID: 666, FirstName: "Eve"}, "let me in")
	tg.WaitUntil(t, 20*time.Second, "the answer and the refusal", func() bool {
		return hasText(tg.BotMessages(42), "echo: hello golem") && hasText(tg.BotMessages(666), "not allowed")
	})
	cancel()
	select {
	case code := <-exited:
		if code != 0 {
			t.Errorf("bot serve exited %d; log:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("bot serve did not stop; log:\n%s", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "golem.db")); err != nil {
		t.Errorf("the store is not where bot.yaml says: %v", err)
	}
	log := stderr.String()
	for _, want := range []string{"platform=telegram", "platform off: no token configured\" platform=slack"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, tg.Token()) {
		t.Error("the log contains the Telegram token")
	}
}

func TestServeRefusesBadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bot.yaml")
	if err := os.WriteFile(path, []byte("engien: cursor\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	if code := run(context.Background(), []string{"serve", "--config", path}, nil, &stderr, &stderr); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "engien") {
		t.Errorf("the error does not name the bad key: %s", stderr.String())
	}
}

func hasText(msgs []telegramtest.Message, substr string) bool {
	for _, m := range msgs {
		if strings.Contains(m.Text, substr) {
			return true
		}
	}
	return false
}

// broken is a platform whose connection fails for good at once.
type broken struct{ core.Adapter }

func (broken) Platform() string { return "broken" }
func (broken) Start(context.Context, core.Handler) error {
	return errors.New("connection refused for good")
}

// TestServeStopsWhenAPlatformFails: a platform failing for good shuts the
// bot down with an error instead of leaving it waiting on the others.
func TestServeStopsWhenAPlatformFails(t *testing.T) {
	saved := remotePlatforms
	t.Cleanup(func() { remotePlatforms = saved })
	remotePlatforms = append(remotePlatforms[:len(remotePlatforms):len(remotePlatforms)], remotePlatform{name: "broken",
		build: func(*app) (core.Adapter, error) { return broken{}, nil }})
	dir := t.TempDir()
	path := filepath.Join(dir, "bot.yaml")
	config := "workspace: ./ws\nstore: ./golem.db\nskills: \"\"\nhttp: {listen: \"127.0.0.1:0\"}\n"
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- run(context.Background(), []string{"serve", "--config", path}, nil, &stderr, &stderr)
	}()
	select {
	case code := <-exited:
		if code != 1 || !strings.Contains(stderr.String(), "connection refused for good") {
			t.Errorf("bot serve exited %d; log:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("bot serve kept running after a platform failed; log:\n%s", stderr.String())
	}
}
