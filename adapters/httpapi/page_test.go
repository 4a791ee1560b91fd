package httpapi

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/parser"
)

// pageAgent plays the dispatcher for the page tests:
//
//	hello  "Hello", a Bash tool call, then waits for release, then more text and done
//	slow   "working", then waits for /stop and ends with the error "stopped"
//	/stop  answers at once (as core's commands do) and stops "slow"
//	ping   "pong" and done
//	fail   the error "the agent exited with status 2"
//	cli says stopped  the CLI's own error "stopped" (no reason: not a stop)
type pageAgent struct {
	release chan struct{}

	mu   sync.Mutex
	stop chan struct{}
	got  []core.Message
}

func (*pageAgent) HandleAction(context.Context, core.Action) core.ActionResult {
	return core.ActionResult{Err: core.ErrUnknownRequest}
}

func (a *pageAgent) Handle(_ context.Context, m core.Message) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, m)
	text := func(s string) parser.Event { return parser.Event{Type: parser.Text, Content: s} }
	switch m.Text {
	case "hello":
		go func() {
			m.Sink(text("Hello"))
			time.Sleep(20 * time.Millisecond)
			m.Sink(parser.Event{Type: parser.ToolCall, ID: "1", Name: "Bash", Args: json.RawMessage(`{"command":"ls   -la"}`)})
			<-a.release
			m.Sink(text(", <b>world</b> & <script>alert(1)</script>\n"))
			time.Sleep(20 * time.Millisecond)
			m.Sink(text("  indented line"))
			m.Sink(parser.Event{Type: parser.Done, SessionID: "s", Stats: &parser.RunStats{DurationMS: ptr[int64](1234), CostUSD: ptr(0.0042), NumTurns: ptr(1)}})
		}()
	case "slow":
		stop := make(chan struct{})
		a.stop = stop
		go func() {
			m.Sink(text("working"))
			<-stop
			m.Sink(parser.Event{Type: parser.Error, Message: "stopped", Reason: parser.Stopped})
		}()
	case "/stop":
		if a.stop != nil {
			close(a.stop)
			a.stop = nil
			m.Sink(text("Stopping the running turn."))
		} else {
			m.Sink(text("Nothing is running."))
		}
		m.Sink(parser.Event{Type: parser.Done})
	case "ping":
		m.Sink(text("pong"))
		m.Sink(parser.Event{Type: parser.Done})
	case "cli says stopped": // the CLI's own error, worded like golem's outcome
		m.Sink(parser.Event{Type: parser.Error, Message: "stopped"})
	default:
		m.Sink(parser.Event{Type: parser.Error, Message: "the agent exited with status 2"})
	}
}

func (a *pageAgent) messages() []core.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]core.Message(nil), a.got...)
}

// lastTurn is a JavaScript expression for the newest turn on the page.
const lastTurn = `document.querySelector("#log .turn:last-of-type")`

func TestPageChat(t *testing.T) {
	tab := newTab(t)
	agent := &pageAgent{release: make(chan struct{})}
	_, base := serve(t, Options{}, agent)
	tab.navigate(base + "/")

	conv := tab.text(`document.getElementById("conversation").textContent`)
	if !regexp.MustCompile(`^web-[0-9a-f]{16}$`).MatchString(conv) {
		t.Fatalf("conversation id %q", conv)
	}
	if stored := tab.text(`localStorage.getItem("golem.conversation")`); stored != conv {
		t.Errorf("stored conversation %q, shown %q", stored, conv)
	}
	if tab.text(`String(document.getElementById("token-form").hidden)`) != "true" {
		t.Error("the token form shows on a server without a token")
	}
	if tab.text(`String(document.getElementById("admin-link").hidden)`) != "true" {
		t.Error("a server without the operator's view links to it")
	}

	// Type a prompt and press Enter: the answer streams in.
	tab.eval(`document.getElementById("prompt").focus()`, nil)
	tab.typeText("hello")
	tab.pressEnter()
	tab.waitFor("the first text and the tool line are shown before the turn ends",
		lastTurn+`?.querySelector(".tool")?.textContent === "🔧 Bash — ls -la"`)
	if got := tab.text(lastTurn + `.querySelector(".text").textContent`); got != "Hello" {
		t.Errorf("streamed text %q", got)
	}
	if tab.text(`String(document.getElementById("stop").disabled)`) != "false" {
		t.Error("Stop is disabled while a turn streams")
	}
	close(agent.release)
	tab.waitFor("the turn has ended", lastTurn+`.querySelector(".meta")`)
	var texts []string
	tab.eval(`Array.from(`+lastTurn+`.querySelectorAll(".text"), e => e.textContent)`, &texts)
	if want := []string{"Hello", ", <b>world</b> & <script>alert(1)</script>\n  indented line"}; strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("answer texts %q, want %q", texts, want)
	}
	if n := tab.text(`String(document.querySelectorAll("#log b, #log script").length)`); n != "0" {
		t.Errorf("the agent's markup became %s elements", n)
	}
	if ws := tab.text(`getComputedStyle(` + lastTurn + `.querySelector(".text")).whiteSpace`); ws != "pre-wrap" {
		t.Errorf("answer white-space %q", ws)
	}
	if meta := tab.text(lastTurn + `.querySelector(".meta").textContent`); meta != "done · 1.2 s · 1 turn · $0.0042" {
		t.Errorf("meta %q", meta)
	}
	// Everything the page loaded (itself, its assets, the API) came from
	// golem; the Content-Security-Policy would block anything else.
	var loaded []string
	tab.eval(`performance.getEntriesByType("resource").map(e => e.name)`, &loaded)
	if !slices.Contains(loaded, base+"/app.js") || !slices.Contains(loaded, base+"/v1/chat") {
		t.Errorf("the page's loads are not all seen: %q", loaded)
	}
	for _, u := range loaded {
		if !strings.HasPrefix(u, base+"/") {
			t.Errorf("the page loaded %q, not from golem", u)
		}
	}
	if you := tab.text(lastTurn + `.querySelector(".you").textContent`); you != "hello" {
		t.Errorf("prompt shown as %q", you)
	}
	if v := tab.text(`document.getElementById("prompt").value`); v != "" {
		t.Errorf("prompt box still holds %q", v)
	}
	if m := agent.messages()[0]; m.Channel != conv || m.Text != "hello" || m.Platform != "http" {
		t.Errorf("the page sent %+v", m)
	}

	// Stop: a running turn ends "stopped"; /stop's answer shows as a turn.
	tab.eval(`document.getElementById("prompt").value = "slow"; document.getElementById("send").click()`, nil)
	tab.waitFor("the slow turn streams", lastTurn+`?.querySelector(".text")?.textContent === "working"`)
	tab.eval(`document.getElementById("stop").click()`, nil)
	tab.waitFor("the slow turn shows it was stopped",
		`Array.from(document.querySelectorAll("#log .turn")).some(t => t.querySelector(".you").textContent === "slow" && t.querySelector(".notice")?.textContent === "⏹ Stopped.")`)
	tab.waitFor("the /stop answer is shown", lastTurn+`.querySelector(".text")?.textContent === "Stopping the running turn."`)
	tab.waitFor("Stop is disabled once nothing streams", `document.getElementById("stop").disabled`)

	// A failure is shown clearly.
	tab.eval(`document.getElementById("prompt").focus()`, nil)
	tab.typeText("fail")
	tab.pressEnter()
	tab.waitFor("the error is shown", lastTurn+`.querySelector(".error[role=alert]")?.textContent === "Error: the agent exited with status 2"`)
	tab.eval(`document.getElementById("prompt").value = "cli says stopped"; document.getElementById("send").click()`, nil)
	tab.waitFor("the CLI's own \"stopped\" is shown as an error", lastTurn+`.querySelector(".you")?.textContent === "cli says stopped" && `+
		lastTurn+`.querySelector(".error[role=alert]")?.textContent === "Error: stopped" && !`+lastTurn+`.querySelector(".notice")`)

	if dir := os.Getenv("GOLEM_SCREENSHOT_DIR"); dir != "" {
		tab.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 900, "height": 1100, "deviceScaleFactor": 1, "mobile": false}, nil)
		tab.screenshot(filepath.Join(dir, "golem-chat.png"))
	}

	// The conversation survives a reload; "New" starts another one.
	tab.navigate(base + "/?again")
	if again := tab.text(`document.getElementById("conversation").textContent`); again != conv {
		t.Errorf("after a reload the conversation is %q, was %q", again, conv)
	}
	tab.eval(`document.getElementById("new-conversation").click()`, nil)
	if next := tab.text(`localStorage.getItem("golem.conversation")`); next == conv || !strings.HasPrefix(next, "web-") {
		t.Errorf("New made conversation %q (was %q)", next, conv)
	}
	var sent []string
	for _, m := range agent.messages() {
		sent = append(sent, m.Text)
	}
	if got := strings.Join(sent, "|"); got != "hello|slow|/stop|fail|cli says stopped" {
		t.Errorf("the page sent %q", got)
	}
	if errs := tab.exceptions(); len(errs) > 0 {
		t.Errorf("the page threw: %v", errs)
	}
}

func TestPageAsksForToken(t *testing.T) {
	tab := newTab(t)
	agent := &pageAgent{}
	_, base := serve(t, Options{Token: "tok-123"}, agent)
	tab.navigate(base + "/")
	tab.waitFor("the page asks for the token", `!document.getElementById("token-form").hidden`)

	saveToken := func(tok string) {
		t.Helper()
		tab.eval(`document.getElementById("token").focus()`, nil)
		tab.typeText(tok)
		tab.eval(`document.querySelector("#token-form button").click()`, nil)
		tab.waitFor("the token form closes", `document.getElementById("token-form").hidden`)
	}
	saveToken("wrong")
	tab.eval(`document.getElementById("prompt").focus()`, nil)
	tab.typeText("ping")
	tab.pressEnter()
	tab.waitFor("a wrong token is reported", lastTurn+`?.querySelector(".error")?.textContent.includes("access token")`)
	tab.waitFor("the page asks again", `!document.getElementById("token-form").hidden`)
	if v := tab.text(`document.getElementById("prompt").value`); v != "ping" {
		t.Errorf("the refused prompt was not put back: %q", v)
	}

	saveToken("tok-123")
	if stored := tab.text(`localStorage.getItem("golem.token")`); stored != "tok-123" {
		t.Errorf("stored token %q", stored)
	}
	tab.eval(`document.getElementById("send").click()`, nil)
	tab.waitFor("the answer arrives with the right token", lastTurn+`?.querySelector(".text")?.textContent === "pong"`)
	if n := len(agent.messages()); n != 1 {
		t.Errorf("the agent got %d messages, want 1 (the refused one never reaches it)", n)
	}
	if errs := tab.exceptions(); len(errs) > 0 {
		t.Errorf("the page threw: %v", errs)
	}
}

// TestPagePermissionButtons: a permission request shows with its buttons;
// Allow lets the agent go on and the request shows its decision, Deny in
// the next turn refuses, and the question's buttons are gone once decided.
func TestPagePermissionButtons(t *testing.T) {
	tab := newTab(t)
	base := serveDispatcher(t)
	tab.navigate(base + "/")
	send := func(text string) {
		tab.eval(`document.getElementById("prompt").value = `+strconv.Quote(text)+`; document.getElementById("send").click()`, nil)
	}
	send("!ask Write {\"file_path\":\"notes.txt\",\"content\":\"x\"}\nwritten")
	tab.waitFor("the request and its buttons", lastTurn+`?.querySelectorAll(".permission .choices button").length === 3`)
	if ask := tab.text(lastTurn + `.querySelector(".permission").textContent`); !strings.Contains(ask, "Write") || !strings.Contains(ask, "notes.txt") {
		t.Errorf("the request shows %q", ask)
	}
	tab.eval(`Array.from(`+lastTurn+`.querySelectorAll(".permission button")).find(b => b.textContent === "Allow").click()`, nil)
	tab.waitFor("the answer goes on", lastTurn+`.querySelector(".text")?.textContent === "echo: written"`)
	tab.waitFor("the decision shows", lastTurn+`.querySelector(".permission .decision")?.textContent === "✅ Allowed."`)
	if n := tab.text(`String(` + lastTurn + `.querySelectorAll(".permission button").length)`); n != "0" {
		t.Errorf("%s buttons left after the decision", n)
	}

	send("!ask Bash {\"command\":\"rm -rf build\"}\ndone")
	tab.waitFor("the second request", lastTurn+`?.querySelector(".you")?.textContent.includes("rm -rf") && `+lastTurn+`.querySelectorAll(".permission button").length === 3`)
	tab.eval(`Array.from(`+lastTurn+`.querySelectorAll(".permission button")).find(b => b.textContent === "Deny").click()`, nil)
	tab.waitFor("the denial shows", lastTurn+`.querySelector(".permission .decision")?.textContent === "❌ Denied."`)
	tab.waitFor("the agent carries on", lastTurn+`.querySelector(".tool.failed")?.textContent.startsWith("✗ denied")`)
	tab.waitFor("the turn ends", lastTurn+`.querySelector(".meta")`)
	if errs := tab.exceptions(); len(errs) > 0 {
		t.Errorf("the page threw: %v", errs)
	}
}
