package httpapi

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/slack"
	"github.com/golem-chat/golem/adapters/slack/slacktest"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/bottest"
	"github.com/golem-chat/golem/store"
)

// adminBot is golem with the Slack adapter on a fake Slack and the HTTP
// adapter with the operator's view, as `bot serve` wires them.
type adminBot struct {
	*bottest.Bot
	fake *slacktest.Server
	base string
}

func startAdminBot(t *testing.T, db string) *adminBot {
	t.Helper()
	fake := slacktest.New(slacktest.Options{PingInterval: time.Second})
	t.Cleanup(fake.Close)
	ln, base := listen(t)
	b := bottest.New(t, bottest.Options{DB: db, Allow: []string{"slack:U1"}, Trusted: []string{"http"}})
	sa, err := slack.New(slack.Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: fake.URL,
		Inbox: core.Inbox{Dir: t.TempDir()}, State: b.Store, Logger: b.Log})
	if err != nil {
		t.Fatal(err)
	}
	doctor := func(context.Context) []DoctorLine {
		return []DoctorLine{{Verdict: "ok", Name: "store", Text: "golem.db opens"}, {Verdict: "FAIL", Name: "engine codex", Text: "codex is not installed"}}
	}
	hs, err := New(Options{Listener: ln, Logger: b.Log, Operator: b.Dispatcher, Store: b.Store, Doctor: doctor})
	if err != nil {
		t.Fatal(err)
	}
	b.Start(hs)
	b.Start(sa)
	fake.AddChannel("C1", "eng-golem")
	if !fake.Wait(20*time.Second, func() bool { return fake.Open() == 1 }) {
		t.Fatal("golem did not connect to the fake Slack")
	}
	return &adminBot{Bot: b, fake: fake, base: base}
}

const slackMention = "<@" + slacktest.BotUserID + ">"

// TestAdminPage: a conversation started in Slack shows running in the
// operator's table, its answer grows on the page, an approval allowed
// from the page lets the agent go on, Stop stops it; the usage chart and
// bot doctor's lines show; the page fits a phone's width.
func TestAdminPage(t *testing.T) {
	tab := newTab(t)
	b := startAdminBot(t, "")
	tab.navigate(b.base + "/admin")
	tab.waitFor("the empty list says so", `!document.getElementById("empty").hidden`)

	if _, err := b.fake.Deliver(slacktest.Event{User: "U1", Channel: "C1",
		Text: slackMention + " !delta-rate 40ms 60\n!ask Bash {\"command\":\"ls\"}\n!text 40\n!hang"}); err != nil {
		t.Fatal(err)
	}
	const key = "slack:" + slacktest.TeamID + ":C1"
	row := `document.querySelector('#conversations tr[data-key="` + key + `"]')`
	tab.waitFor("the Slack conversation shows running", row+`?.querySelector(".state .badge")?.textContent === "running"`)
	tab.eval(row+`.click()`, nil)
	tab.waitFor("the live answer has begun", `document.getElementById("live").textContent.length >= 3`)
	first := len(tab.text(`document.getElementById("live").textContent`))
	tab.waitFor("the live answer grows", fmt.Sprintf(`document.getElementById("live").textContent.length > %d`, first))

	allow := `document.querySelector('#pending button[data-decision="allow"]')`
	tab.waitFor("the approval shows with its buttons", allow)
	if got := tab.text(`document.querySelector("#pending .request").textContent`); !strings.Contains(got, "Bash asked by slack:U1") {
		t.Errorf("the request reads %q", got)
	}
	tab.waitFor("the table says it waits", row+`.querySelector(".state .badge").textContent === "waiting"`)
	tab.eval(allow+`.click()`, nil)
	tab.waitFor("the page says it was allowed", `document.querySelector("#pending").textContent.includes("Allowed: Bash")`)
	// The agent goes on: its filler text after the approval streams in.
	tab.waitFor("the agent goes on after the allow", `document.getElementById("live").textContent.includes("lorem")||document.getElementById("live").textContent.length > 100`)
	if !b.fake.Wait(20*time.Second, func() bool {
		for _, m := range b.fake.BotMessages("C1") {
			if strings.Contains(m.Text, "allowed by") && !strings.Contains(m.Blocks, `"actions"`) {
				return true
			}
		}
		return false
	}) {
		t.Errorf("the Slack question was not settled; bot messages: %+v", b.fake.BotMessages("C1"))
	}
	recs, err := b.Store.Approvals(false)
	if err != nil || len(recs) != 1 || recs[0].DecidedBy != core.Operator {
		t.Errorf("approvals %+v, %v", recs, err)
	}

	tab.eval(`document.getElementById("conv-stop").click()`, nil)
	tab.waitFor("the answer ends stopped", `document.getElementById("live").textContent.endsWith("— stopped")`)
	tab.waitFor("the table shows it idle", row+`.querySelector(".state .badge").textContent === "idle"`)
	tab.waitFor("the turn is listed stopped", `document.querySelector("#turns tbody tr td:nth-child(3)")?.textContent === "stopped"`)
	tab.waitFor("the audit shows the stop", `document.getElementById("audit").textContent.includes("http:operator · stop")`)
	if !b.fake.Wait(20*time.Second, func() bool {
		for _, m := range b.fake.BotMessages("C1") {
			if strings.Contains(strings.ToLower(m.Text), "stopped") {
				return true
			}
		}
		return false
	}) {
		t.Errorf("Slack's answer does not say it stopped; bot messages: %+v", b.fake.BotMessages("C1"))
	}

	tab.waitFor("the row shows the channel's name", row+`.querySelector(".sub").textContent === "#eng-golem"`)
	// Usage: one bar a day for 30 days.
	tab.waitFor("the usage chart has 30 days, today's with its turn", `document.querySelectorAll("#usage-chart rect.bar").length === 30 && `+
		`document.querySelectorAll("#usage-chart rect.bar:not(.zero)").length === 1 && `+
		`document.querySelector("#usage-chart rect.bar:last-of-type title").textContent.includes(": 1 turns")`)
	// bot doctor's lines.
	tab.eval(`document.getElementById("doctor-run").click()`, nil)
	tab.waitFor("doctor's lines show", `document.querySelectorAll("#doctor li").length === 2 && document.querySelector("#doctor li.FAIL")?.textContent.includes("codex is not installed")`)

	// A phone's width: nothing wider than the screen.
	tab.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 375, "height": 800, "deviceScaleFactor": 2, "mobile": true}, nil)
	tab.waitFor("the page fits 375 px", `document.documentElement.scrollWidth <= 376`)
	if dir := os.Getenv("GOLEM_SCREENSHOT_DIR"); dir != "" {
		tab.screenshot(filepath.Join(dir, "golem-admin-phone.png"))
		tab.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1100, "height": 1300, "deviceScaleFactor": 1, "mobile": false}, nil)
		tab.screenshot(filepath.Join(dir, "golem-admin.png"))
	}
	if errs := tab.exceptions(); len(errs) > 0 {
		t.Errorf("the page threw: %v", errs)
	}
}

// TestAdminPageTenThousand: with 10,000 conversations the page shows them
// 50 at a time and pages through them; it reports how long Chromium took.
func TestAdminPageTenThousand(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 conversations")
	}
	db := filepath.Join(t.TempDir(), "golem.db")
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 10000; i += 8 {
				k := store.NewKey("slack", "T1", fmt.Sprintf("C%05d", i), "")
				if err := st.SaveConversation(store.Conversation{Key: k, SessionID: "s", LastUsed: now.Add(-time.Duration(i) * time.Second)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	tab := newTab(t)
	b := startAdminBot(t, db)
	start := time.Now()
	tab.navigate(b.base + "/admin")
	tab.waitFor("the first page shows", `document.querySelectorAll("#conversations tbody tr").length === 50`)
	loaded := time.Since(start)
	if got := tab.text(`document.querySelector("#conversations tbody tr").dataset.key`); got != "slack:T1:C00000" {
		t.Errorf("first row %q, want the newest", got)
	}
	start = time.Now()
	for page := 1; page <= 3; page++ {
		tab.eval(`document.getElementById("page-older").click()`, nil)
		tab.waitFor("the next page shows", fmt.Sprintf(`document.querySelector("#conversations tbody tr")?.dataset.key === "slack:T1:C%05d"`, page*50))
	}
	paged := time.Since(start) / 3
	var render float64
	tab.eval(`window.golemAdmin.renderMs()`, &render)
	t.Logf("Chromium, 10,000 conversations: first page of 50 shown %v after navigating; next page %v each; a page's DOM built in %.1f ms",
		loaded.Round(time.Millisecond), paged.Round(time.Millisecond), render)
	if errs := tab.exceptions(); len(errs) > 0 {
		t.Errorf("the page threw: %v", errs)
	}
}

// TestAdminPageToken: with http.token set the page asks for it, says so
// when it is wrong, and once right lists the conversations; the token is
// the chat page's, kept under the same name.
func TestAdminPageToken(t *testing.T) {
	tab := newTab(t)
	base, b := serveOperator(t, "tok-9")
	if err := b.Store.SaveConversation(store.Conversation{Key: store.NewKey("telegram", "", "42", "")}); err != nil {
		t.Fatal(err)
	}
	tab.navigate(base + "/admin")
	tab.waitFor("the page asks for the token", `!document.getElementById("token-form").hidden`)
	save := func(tok string) {
		t.Helper()
		tab.eval(`document.getElementById("token").focus()`, nil)
		tab.typeText(tok)
		tab.eval(`document.querySelector("#token-form button").click()`, nil)
	}
	save("wrong")
	tab.waitFor("a wrong token is said and asked again", `document.getElementById("status").textContent.includes("access token") && !document.getElementById("token-form").hidden`)
	tab.eval(`document.getElementById("token").focus()`, nil)
	tab.typeText("tok")
	polls := `performance.getEntriesByType("resource").filter(e => e.name.includes("/v1/conversations?")).length`
	var before int
	tab.eval(polls, &before)
	tab.waitFor("two polls come and go while the token is typed", fmt.Sprintf("%s >= %d", polls, before+2))
	if v := tab.text(`document.getElementById("token").value`); v != "tok" {
		t.Errorf("the token being typed became %q", v)
	}
	tab.eval(`document.getElementById("token").value = ""`, nil)
	save("tok-9")
	tab.waitFor("the list shows with the right token", `document.querySelector('#conversations tr[data-key="telegram::42"]')`)
	if stored := tab.text(`localStorage.getItem("golem.token")`); stored != "tok-9" {
		t.Errorf("stored token %q", stored)
	}
	tab.navigate(base + "/")
	if tab.text(`String(document.getElementById("admin-link").hidden)`) != "false" {
		t.Error("the chat page does not link to the operator's page")
	}
	if tab.text(`String(document.getElementById("token-form").hidden)`) != "true" {
		t.Error("the chat page asks again for the token the operator's page saved")
	}
	if errs := tab.exceptions(); len(errs) > 0 {
		t.Errorf("the page threw: %v", errs)
	}
}
