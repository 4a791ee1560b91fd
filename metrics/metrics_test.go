package metrics_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/httpapi"
	"github.com/golem-chat/golem/adapters/telegram"
	"github.com/golem-chat/golem/adapters/telegram/telegramtest"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/bottest"
	"github.com/golem-chat/golem/internal/retry"
	"github.com/golem-chat/golem/metrics"
)

// serve wires a bot whose dispatcher reports to a new Registry and serves
// the HTTP API with its /metrics, and returns the registry and the base URL.
func serve(t *testing.T, opts bottest.Options, token string) (*metrics.Registry, string, *bottest.Bot) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg := metrics.New()
	opts.Trusted = append(opts.Trusted, "http")
	opts.Tune = func(o *core.Options) { o.Meter = reg }
	b := bottest.New(t, opts)
	reg.Watch(b.Dispatcher)
	srv, err := httpapi.New(httpapi.Options{Listener: ln, Token: token, Logger: b.Log, Metrics: reg.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	b.Start(srv)
	return reg, "http://" + ln.Addr().String(), b
}

// chat posts text to conversation and returns the events of its stream;
// onText, if set, runs at the first text event while the stream goes on.
func chat(t *testing.T, base, conversation, text string, onText func()) []map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"conversation": conversation, "text": text})
	res, err := http.Post(base+"/v1/chat", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST %q: status %d", text, res.StatusCode)
	}
	var events []map[string]any
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		events = append(events, ev)
		if ev["type"] == "text" && onText != nil {
			onText()
			onText = nil
		}
		if ev["type"] == "done" || ev["type"] == "error" {
			return events
		}
	}
	t.Fatalf("POST %q: the stream ended without a terminal event: %v", text, events)
	return nil
}

// scrape returns GET /metrics.
func scrape(t *testing.T, base string, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	if len(header) == 2 {
		req.Header.Set(header[0], header[1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// value returns the sample named series (name and labels, as the text
// format writes them: labels sorted) in text, or -1 when absent.
func value(text, series string) float64 {
	for l := range strings.SplitSeq(text, "\n") {
		if rest, ok := strings.CutPrefix(l, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

func TestMetricsAfterTurnsOfEachOutcome(t *testing.T) {
	_, base, _ := serve(t, bottest.Options{Timeout: 3 * time.Second}, "")

	last := func(evs []map[string]any) map[string]any { return evs[len(evs)-1] }
	if ev := last(chat(t, base, "done", "hello there", nil)); ev["type"] != "done" {
		t.Fatalf("hello: %v", ev)
	}
	if ev := last(chat(t, base, "error", "!error secret-boom", nil)); ev["type"] != "error" {
		t.Fatalf("!error: %v", ev)
	}
	if ev := last(chat(t, base, "crash", "!crash 3", nil)); ev["reason"] != "crashed" {
		t.Fatalf("!crash: %v", ev)
	}
	stop := func() {
		if ev := last(chat(t, base, "stop", "/stop", nil)); ev["type"] != "done" {
			t.Errorf("/stop: %v", ev)
		}
	}
	if ev := last(chat(t, base, "stop", "!text 40\n!sleep 30s", stop)); ev["reason"] != "stopped" {
		t.Fatalf("stopped turn: %v", ev)
	}
	if ev := last(chat(t, base, "slow", "!sleep 30s", nil)); ev["reason"] != "timed_out" {
		t.Fatalf("slow turn: %v", ev)
	}

	// The slot is given back just after the answer ends; a gauge can only
	// be read again until it shows it.
	settled(t, base, "golem_turns_running", 0)
	code, text := scrape(t, base)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d\n%s", code, text)
	}
	want := map[string]float64{
		`golem_turns_total{engine="claude-code",outcome="done",platform="http"}`:      1,
		`golem_turns_total{engine="claude-code",outcome="error",platform="http"}`:     2, // the CLI's error and the crash
		`golem_turns_total{engine="claude-code",outcome="stopped",platform="http"}`:   1,
		`golem_turns_total{engine="claude-code",outcome="timed_out",platform="http"}`: 1,
		`golem_engine_failures_total{engine="claude-code",kind="cli_error"}`:          1,
		`golem_engine_failures_total{engine="claude-code",kind="crashed"}`:            1,
		`golem_turn_duration_seconds_count{engine="claude-code",platform="http"}`:     5,
		`golem_first_text_seconds_count{engine="claude-code",platform="http"}`:        2, // hello and the stopped one
		`golem_turns_running`: 0,
		`golem_queue_waiting`: 0,
	}
	for series, v := range want {
		if got := value(text, series); got != v {
			t.Errorf("%s = %v, want %v", series, got, v)
		}
	}
	if got := value(text, `golem_turn_duration_seconds_bucket{engine="claude-code",platform="http",le="2"}`); got < 3 {
		t.Errorf("turns under 2 s: %v, want at least the done, error and crash turns", got)
	}
	if !strings.Contains(text, "go_goroutines ") || !strings.Contains(text, "process_resident_memory_bytes ") {
		t.Error("no Go runtime or process metrics")
	}
	for _, leak := range []string{"hello there", "secret-boom", `conversation="`, `user="`} {
		if strings.Contains(text, leak) {
			t.Errorf("the metrics carry %q", leak)
		}
	}
}

func TestMetricsGaugesWhileATurnRuns(t *testing.T) {
	_, base, _ := serve(t, bottest.Options{MaxConcurrent: 1}, "")
	var running, waiting float64
	stop := func() {
		// The slot is taken: a second conversation's message waits for it.
		done := make(chan struct{})
		go func() {
			defer close(done)
			chat(t, base, "second", "hello", nil)
		}()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
			_, text := scrape(t, base)
			running, waiting = value(text, "golem_turns_running"), value(text, "golem_queue_waiting")
			if waiting == 1 {
				break
			}
			time.Sleep(20 * time.Millisecond) // polling a gauge: nothing to wait on
		}
		chat(t, base, "first", "/stop", nil)
		<-done
	}
	chat(t, base, "first", "!text 40\n!sleep 30s", stop)
	if running != 1 || waiting != 1 {
		t.Fatalf("while one turn ran and one waited: running %v, waiting %v", running, waiting)
	}
}

func TestMetricsFollowTheAPIsTokenRule(t *testing.T) {
	_, base, _ := serve(t, bottest.Options{}, "metrics-token-1234")
	if code, _ := scrape(t, base); code != http.StatusUnauthorized {
		t.Fatalf("GET /metrics without the token: %d, want 401", code)
	}
	if code, text := scrape(t, base, "Authorization", "Bearer metrics-token-1234"); code != http.StatusOK || !strings.Contains(text, "golem_turns_running 0") {
		t.Fatalf("GET /metrics with the token: %d\n%s", code, text)
	}
}

func TestMetricsCountAPlatformsRateLimit(t *testing.T) {
	tg := telegramtest.New(t, telegramtest.Options{}) // first: it closes after the bot
	reg, base, b := serve(t, bottest.Options{Allow: []string{"telegram:42"}}, "")
	prev := retry.Observe(reg)
	t.Cleanup(func() { retry.Observe(prev) })
	a, err := telegram.New(telegram.Options{Token: tg.Token(), APIURL: tg.URL, State: b.Store, Logger: b.Log,
		Inbox: core.Inbox{Dir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	b.Start(a)
	tg.Fail("sendMessage", 1, telegramtest.Failure{Code: 429, Desc: "Too Many Requests: retry after 1", RetryAfter: 1})
	tg.PushPrivate(telegramtest.User{ID: 42, FirstName: "Ada"}, "hello")
	tg.WaitUntil(t, 20*time.Second, "the answer after the 429", func() bool {
		for _, m := range tg.BotMessages(42) {
			if strings.Contains(m.Text, "echo: hello") {
				return true
			}
		}
		return false
	})
	_, text := scrape(t, base)
	if got := value(text, `golem_platform_rate_limited_total{method="sendMessage",platform="telegram"}`); got != 1 {
		t.Errorf("rate-limited sendMessage = %v, want 1\n%s", got, grep(text, "golem_platform"))
	}
	if got := value(text, `golem_platform_calls_total{method="sendMessage",platform="telegram"}`); got < 2 {
		t.Errorf("sendMessage attempts = %v, want the refused one and its retry\n%s", got, grep(text, "golem_platform"))
	}
	if got := value(text, `golem_turns_total{engine="claude-code",outcome="done",platform="telegram"}`); got != 1 {
		t.Errorf("telegram turns done = %v, want 1", got)
	}
}

// settled scrapes until the gauge series reads want, for 20 s at most.
func settled(t *testing.T, base, series string, want float64) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		_, text := scrape(t, base)
		got := value(text, series)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v, want %v", series, got, want)
		}
		time.Sleep(10 * time.Millisecond) // a gauge gives nothing to wait on
	}
}

func grep(text, prefix string) string {
	var b strings.Builder
	for l := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func TestMetricsCountScheduleRuns(t *testing.T) {
	reg := metrics.New()
	reg.ScheduleRun("done")
	reg.ScheduleRun("done")
	reg.ScheduleRun("skipped_busy")
	rec := httptest.NewRecorder()
	reg.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{`golem_schedule_runs_total{outcome="done"} 2`, `golem_schedule_runs_total{outcome="skipped_busy"} 1`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("no %s in\n%s", want, rec.Body.String())
		}
	}
}
