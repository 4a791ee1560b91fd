package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/telegram/telegramtest"
	"github.com/golem-chat/golem/engine/enginetest"
)

// freeAddr is a 127.0.0.1 address nothing listens on just now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestServeOperatorAPI runs `bot serve` as a process of its own with a
// (fake) Telegram and http.token set, and works the operator's API the
// way a script would: the token is wanted from loopback too, a Telegram
// conversation's running answer is listed, joined and stopped, and bad
// keys are refused, never a 500.
func TestServeOperatorAPI(t *testing.T) {
	tg := telegramtest.New(t, telegramtest.Options{})
	dir := t.TempDir()
	addr := freeAddr(t)
	const token = "operator-s3cret"
	config := fmt.Sprintf(`
engine: claude-code
workspace: ./ws
store: ./data/golem.db
skills: ""
access:
  allow: ["telegram:42"]
sandbox: {mode: "off"}
engines:
  claude-code: {command: %q}
telegram: {token: %q, api_url: %q}
slack: {bot_token: "", app_token: ""}
http: {listen: %q, token: %q}
`, enginetest.Build(t), tg.Token(), tg.URL, addr, token)
	path := filepath.Join(dir, "bot.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	bot := startBot(t, &log, "serve", "--config", path)
	base := "http://" + addr
	do := func(method, path, tok string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v; log:\n%s", method, path, err, log.String())
		}
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if res, err := http.Get(base + "/healthz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("bot serve did not answer /healthz; log:\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, tok := range []string{"", "wrong"} {
		if res := do("GET", "/v1/conversations", tok); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("the listing with token %q from loopback: %d, want 401", tok, res.StatusCode)
		}
	}
	type conv struct {
		Key, State, Platform string
	}
	var page struct {
		Conversations []conv
		Next          *string
	}
	list := func() []conv {
		t.Helper()
		res := do("GET", "/v1/conversations?state=running", token)
		if res.StatusCode != 200 {
			t.Fatalf("listing: %d", res.StatusCode)
		}
		page.Conversations = nil
		if err := json.NewDecoder(res.Body).Decode(&page); err != nil {
			t.Fatal(err)
		}
		return page.Conversations
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("a fresh bot lists %+v running", got)
	}

	tg.PushPrivate(telegramtest.User{ID: 42, FirstName: "Ada"}, "!text 10\n!hang")
	var key string
	tg.WaitUntil(t, 30*time.Second, "the Telegram conversation is listed running", func() bool {
		if got := list(); len(got) == 1 && got[0].Platform == "telegram" {
			key = got[0].Key
		}
		return key != "" && hasText(tg.BotMessages(42), "the quick")
	})
	esc := "/v1/conversations/" + url.PathEscape(key)
	events := do("GET", esc+"/events", token)
	if events.StatusCode != 200 {
		t.Fatalf("events: %d", events.StatusCode)
	}
	sse := bufio.NewReader(events.Body)
	first, err := sse.ReadString('\n')
	if err != nil || !strings.HasPrefix(first, `data: {"type":"text"`) || !strings.Contains(first, "the quick") {
		t.Fatalf("the joined answer began %q, %v", first, err)
	}
	if res := do("POST", esc+"/stop", ""); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("stop without the token: %d", res.StatusCode)
	}
	if res := do("POST", esc+"/stop", token); res.StatusCode != 200 {
		t.Fatalf("stop: %d", res.StatusCode)
	}
	rest, _ := io.ReadAll(sse)
	if !strings.Contains(string(rest), `"reason":"stopped"`) {
		t.Errorf("the joined answer ended %q", rest)
	}
	var detail struct {
		State string
		Turns []struct{ Outcome, By string }
		Audit []struct{ Action, By string }
	}
	tg.WaitUntil(t, 30*time.Second, "the stopped turn is recorded", func() bool {
		res := do("GET", esc, token)
		if res.StatusCode != 200 || json.NewDecoder(res.Body).Decode(&detail) != nil {
			return false
		}
		return detail.State == "idle" && len(detail.Turns) == 1
	})
	if detail.Turns[0].Outcome != "stopped" || detail.Turns[0].By != "telegram:42" || len(detail.Audit) != 1 || detail.Audit[0].By != "http:operator" {
		t.Errorf("detail %+v", detail)
	}
	for path, want := range map[string]int{
		"/v1/conversations/telegram::43":                   404,
		"/v1/conversations/..%2F..%2Fdata":                 400,
		"/v1/conversations/telegram::42%00":                400,
		"/v1/conversations/" + strings.Repeat("k", 10<<10): 400,
	} {
		if res := do("GET", path, token); res.StatusCode != want {
			t.Errorf("GET %.60s: %d, want %d", path, res.StatusCode, want)
		}
	}
	if res := do("GET", "/admin", ""); res.StatusCode != 200 || res.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("the page: %d, CSP %q", res.StatusCode, res.Header.Get("Content-Security-Policy"))
	}
	res := do("GET", "/v1/doctor", token)
	var doc struct {
		Lines []struct{ Verdict, Name, Text string }
	}
	if res.StatusCode != 200 || json.NewDecoder(res.Body).Decode(&doc) != nil || len(doc.Lines) == 0 {
		t.Fatalf("doctor: %d %+v", res.StatusCode, doc)
	}
	for _, l := range doc.Lines {
		if strings.Contains(l.Text, token) || strings.Contains(l.Text, tg.Token()) {
			t.Errorf("a doctor line shows a secret: %+v", l)
		}
	}
	if !strings.Contains(log.String(), "operator action") {
		t.Errorf("the log does not show the operator's stop:\n%s", log.String())
	}

	if err := bot.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- bot.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("bot serve exited with %v; log:\n%s", err, log.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("bot serve did not stop; log:\n%s", log.String())
	}
}
