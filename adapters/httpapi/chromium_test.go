package httpapi

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// A minimal DevTools-protocol driver for headless Chromium, enough to load
// the chat page, type, click and read the DOM; no Node, no chromedp.

// chromiumBin returns the Chromium to run, skipping the test when there is
// none unless GOLEM_REQUIRE_TOOLS=1.
func chromiumBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("GOLEM_CHROMIUM_BIN")
	if bin == "" {
		bin = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(bin); err != nil {
		if os.Getenv("GOLEM_REQUIRE_TOOLS") == "1" {
			t.Fatalf("chromium not found at %s (GOLEM_REQUIRE_TOOLS=1): %v", bin, err)
		}
		t.Skipf("chromium not found at %s; set GOLEM_CHROMIUM_BIN", bin)
	}
	return bin
}

var devtoolsURL = regexp.MustCompile(`DevTools listening on (ws://127\.0\.0\.1:\d+/\S+)`)

// browserTab is one page of a headless Chromium started for the test.
type browserTab struct {
	t       *testing.T
	conn    *websocket.Conn
	session string

	wmu     sync.Mutex // serializes websocket writes
	nextID  atomic.Int64
	mu      sync.Mutex
	pending map[int64]chan cdpReply
	errs    []string // uncaught page exceptions
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// newTab starts Chromium (killed with its process group at the end of the
// test) and opens a blank tab. Chromium resolves no name but 127.0.0.1 and
// fetches nothing in the background.
func newTab(t *testing.T) *browserTab {
	t.Helper()
	bin := chromiumBin(t)
	cmd := exec.Command(bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-default-apps", "--mute-audio", "--no-default-browser-check",
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
		"--user-data-dir="+t.TempDir(), "--window-size=900,700",
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the whole group we started
		_ = cmd.Wait()
	})
	found := make(chan string, 1)
	var logMu sync.Mutex
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			logMu.Lock()
			log.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if m := devtoolsURL.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	var wsURL string
	select {
	case wsURL = <-found:
	case <-time.After(30 * time.Second):
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("chromium did not print its DevTools address; stderr:\n%s", log.String())
	}
	conn, _, err := websocket.DefaultDialer.Dial(wsURL, nil)
	if err != nil {
		t.Fatalf("connect to chromium: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	b := &browserTab{t: t, conn: conn, pending: map[int64]chan cdpReply{}}
	go b.readLoop()

	var target struct{ TargetID string }
	b.call("Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct{ SessionID string }
	b.call("Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	b.session = attached.SessionID
	b.call("Runtime.enable", nil, nil)
	b.call("Page.enable", nil, nil)
	return b
}

func (b *browserTab) readLoop() {
	for {
		var msg struct {
			ID     int64           `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			cdpReply
		}
		if err := b.conn.ReadJSON(&msg); err != nil {
			b.mu.Lock()
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		if msg.ID != 0 {
			b.mu.Lock()
			ch := b.pending[msg.ID]
			delete(b.pending, msg.ID)
			b.mu.Unlock()
			if ch != nil {
				ch <- msg.cdpReply
			}
			continue
		}
		if msg.Method == "Runtime.exceptionThrown" {
			b.mu.Lock()
			b.errs = append(b.errs, string(msg.Params))
			b.mu.Unlock()
		}
	}
}

// call sends a DevTools command (to the tab once attached) and decodes its
// result into out (when not nil); it fails the test on an error.
func (b *browserTab) call(method string, params any, out any) {
	b.t.Helper()
	if err := b.try(method, params, out); err != nil {
		b.t.Fatalf("%s: %v", method, err)
	}
}

func (b *browserTab) try(method string, params any, out any) error {
	id := b.nextID.Add(1)
	ch := make(chan cdpReply, 1)
	b.mu.Lock()
	b.pending[id] = ch
	b.mu.Unlock()
	req := map[string]any{"id": id, "method": method, "params": params}
	if params == nil {
		req["params"] = map[string]any{}
	}
	if b.session != "" {
		req["sessionId"] = b.session
	}
	b.wmu.Lock()
	err := b.conn.WriteJSON(req)
	b.wmu.Unlock()
	if err != nil {
		return err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return errors.New("the DevTools connection closed")
		}
		if r.Error != nil {
			return errors.New(r.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-time.After(30 * time.Second):
		return errors.New("no answer from chromium")
	}
}

// eval evaluates a JavaScript expression in the page (awaiting a promise)
// and decodes its value into out when not nil.
func (b *browserTab) eval(expr string, out any) {
	b.t.Helper()
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	b.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r)
	if r.ExceptionDetails != nil {
		b.t.Fatalf("evaluate %s: %s %s", expr, r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if out != nil && len(r.Result.Value) > 0 {
		if err := json.Unmarshal(r.Result.Value, out); err != nil {
			b.t.Fatalf("evaluate %s: decode %s: %v", expr, r.Result.Value, err)
		}
	}
}

// text returns the value of a JavaScript string expression.
func (b *browserTab) text(expr string) string {
	b.t.Helper()
	var s string
	b.eval(expr, &s)
	return s
}

// navigate loads url and waits until the page has loaded.
func (b *browserTab) navigate(url string) {
	b.t.Helper()
	b.call("Page.navigate", map[string]any{"url": url}, nil)
	b.waitFor("the page has loaded", `document.readyState === "complete" && location.href === `+jsString(url))
}

// waitFor polls a JavaScript boolean expression until it is true; on the
// deadline it fails the test showing the page's text.
func (b *browserTab) waitFor(what, cond string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		b.eval("!!("+cond+")", &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out waiting until %s (%s); the page shows:\n%s", what, cond, b.text("document.body.innerText"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// typeText types s into the focused element as a keyboard would.
func (b *browserTab) typeText(s string) {
	b.t.Helper()
	b.call("Input.insertText", map[string]any{"text": s}, nil)
}

// pressEnter presses and releases the Enter key.
func (b *browserTab) pressEnter() {
	b.t.Helper()
	for _, typ := range []string{"keyDown", "keyUp"} {
		b.call("Input.dispatchKeyEvent", map[string]any{
			"type": typ, "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "text": "\r",
		}, nil)
	}
}

// screenshot saves a PNG of the page into dir.
func (b *browserTab) screenshot(path string) {
	b.t.Helper()
	var shot struct{ Data string }
	b.call("Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", path)
}

// exceptions returns the uncaught exceptions the page has thrown.
func (b *browserTab) exceptions() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errs...)
}

func jsString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
