package telegram

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/telegram/telegramtest"
)

// BenchmarkStreaming100Chats is the load figure of the Telegram adapter:
// 100 private chats each stream a 20,000-character answer (2,000 deltas
// of 10 characters, 30 ms apart: five messages, four of them
// continuations) through the real library, core and the fake agent,
// against the fake Bot API holding each chat to one message call a second
// (sends, edits and drafts together, burst 1) and the bot to 30 a second
// (burst 30).
//
// "spread" has the agents' first texts evenly over 1–3 s after the 100
// messages arrive; "burst" has all 100 first texts in the same instant.
//
// It reports 429 answers (want 0), answers whose messages do not add up
// to the exact text (want 0), the median and 90th percentile of the first
// visible text after the agent's first text (the fake agent stamps it),
// floor-median-ms (the median an ideal sender under a 30/s, burst-30
// budget would get for the same first texts) and where the first text's
// time went: core-median-ms (agent's text to the adapter's Send),
// budget-median-ms (Send to its budget grant) and http-median-ms (grant to
// the fake). peak-RSS-MB and cpu-s are the test process's (bot and fake
// server together); agents-cpu-s is the fake agents'; load1 is the load
// average at the end.
//
//	go test -run '^$' -bench Streaming100Chats -benchtime 1x -timeout 20m ./adapters/telegram/
func BenchmarkStreaming100Chats(b *testing.B) {
	for _, tc := range []struct {
		name   string
		spread time.Duration
	}{{"spread", 2 * time.Second}, {"burst", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				streamChats(b, 100, 2000, 10, tc.spread)
			}
		})
	}
}

var stampRE = regexp.MustCompile(`^stamp:(\d+)`)

func streamChats(b *testing.B, chats, deltas, size int, spread time.Duration) {
	st := newStack(b, telegramtest.Options{EnforceRates: true})
	st.allow = []string{"telegram:*"}
	trace := &grants{}
	st.opts.Logger = slog.New(trace)
	st.up()
	b.Cleanup(st.stop)
	cpu0, kids0 := cpuTime()

	// The first texts start a second after the messages arrive (the
	// agents have started by then), spread evenly over spread.
	t0 := time.Now().Add(time.Second)
	if spread == 0 {
		t0 = t0.Add(2 * time.Second) // 100 agents start on a small machine
	}
	for i := range chats {
		at := t0.Add(spread * time.Duration(i) / time.Duration(chats))
		prompt := fmt.Sprintf("!sleep-until %d\n!stamp\n!delta-rate 30ms %d %d", at.UnixNano(), deltas, size)
		st.s.PushPrivate(telegramtest.User{ID: int64(1000 + i), Username: fmt.Sprintf("u%d", i)}, prompt)
	}
	want := strings.Repeat("x", deltas*size)
	exact := func(chat int64) bool {
		var all strings.Builder
		for _, m := range st.s.BotMessages(chat) {
			all.WriteString(strings.Join(strings.Fields(m.Text), ""))
		}
		text := all.String()
		return stampRE.MatchString(text) && stampRE.ReplaceAllString(text, "") == want
	}
	done := func() int {
		n := 0
		for i := range chats {
			if exact(int64(1000 + i)) {
				n++
			}
		}
		return n
	}
	st.s.WaitUntil(b, 10*time.Minute, "every final text", func() bool { return done() == chats })
	elapsed := time.Since(t0)
	cpu1, kids1 := cpuTime()

	var lat, core, budget, http []time.Duration
	var stamps []time.Time
	for i := range chats {
		chat := int64(1000 + i)
		ms := st.s.BotMessages(chat)
		m := stampRE.FindStringSubmatch(ms[0].Text)
		if m == nil {
			b.Fatalf("chat %d: the first message is %.40q, not the stamp", chat, ms[0].Text)
		}
		ns, _ := strconv.ParseInt(m[1], 10, 64)
		stamp := time.Unix(0, ns)
		stamps = append(stamps, stamp)
		lat = append(lat, ms[0].At.Sub(stamp))
		if g, ok := trace.first(chat); ok {
			core = append(core, g.asked.Sub(stamp))
			budget = append(budget, g.granted.Sub(g.asked))
			http = append(http, ms[0].At.Sub(g.granted))
		}
	}
	b.ReportMetric(float64(st.s.RateLimited()), "429s")
	first, cont, edits := limitedCalls(st.s)
	b.ReportMetric(float64(first), "429-first-sends")
	b.ReportMetric(float64(cont), "429-continuations")
	b.ReportMetric(float64(edits), "429-edits")
	b.ReportMetric(float64(chats-done()), "inexact")
	b.ReportMetric(ms(median(lat)), "first-visible-median-ms")
	b.ReportMetric(ms(pct(lat, 90)), "first-visible-p90-ms")
	b.ReportMetric(ms(median(idealWaits(stamps, 30, 30))), "floor-median-ms")
	b.ReportMetric(ms(median(core)), "core-median-ms")
	b.ReportMetric(ms(median(budget)), "budget-median-ms")
	b.ReportMetric(ms(median(http)), "http-median-ms")
	b.ReportMetric(elapsed.Seconds(), "s-to-all-final")
	b.ReportMetric(float64(len(st.s.Calls("editMessageText"))), "edits")
	b.ReportMetric(float64(len(st.s.Calls("sendMessage"))), "sends")
	b.ReportMetric(peakRSSMB(), "peak-RSS-MB")
	b.ReportMetric((cpu1 - cpu0).Seconds(), "cpu-s")
	b.ReportMetric((kids1 - kids0).Seconds(), "agents-cpu-s")
	b.ReportMetric(load1(), "load1")
}

// limitedCalls counts the calls the fake answered 429, by what they were:
// a chat's first message, a later one (a continuation: the benchmark has
// no tool activity), an edit.
func limitedCalls(s *telegramtest.Server) (first, continuations, edits int) {
	posted := map[string]bool{}
	for _, c := range s.Calls("") {
		chat := c.Params.Get("chat_id")
		switch {
		case c.Method == "editMessageText" && c.Limited:
			edits++
		case c.Method != "sendMessage":
		case c.Limited && posted[chat]:
			continuations++
		case c.Limited:
			first++
		default:
			posted[chat] = true
		}
	}
	return first, continuations, edits
}

// idealWaits is how long each first text would wait under a budget of
// rate a second with burst, all tokens there at the start and nothing
// else spending them: the floor for any sender.
func idealWaits(at []time.Time, rate, burst float64) []time.Duration {
	at = slices.Clone(at)
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	var out []time.Duration
	tokens, last := burst, at[0]
	for _, t := range at {
		if t.After(last) {
			tokens = min(burst, tokens+t.Sub(last).Seconds()*rate)
			last = t
		}
		if tokens < 1 { // wait for the next token
			last = last.Add(time.Duration((1 - tokens) / rate * float64(time.Second)))
			tokens = 1
		}
		tokens--
		out = append(out, last.Sub(t))
	}
	return out
}

func median(d []time.Duration) time.Duration { return pct(d, 50) }

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)*p/100]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// grants collects the adapter's debug records of budget grants, to see
// where a first text's time goes.
type grants struct {
	mu     sync.Mutex
	byChat map[int64]grant // the first grant of a new answer per chat
}

type grant struct{ asked, granted time.Time }

func (g *grants) Enabled(context.Context, slog.Level) bool { return true }
func (g *grants) WithAttrs([]slog.Attr) slog.Handler       { return g }
func (g *grants) WithGroup(string) slog.Handler            { return g }

func (g *grants) Handle(_ context.Context, r slog.Record) error {
	if r.Message != budgetGranted {
		return nil
	}
	var chat int64
	var wait time.Duration
	first := false
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "chat":
			chat = a.Value.Int64()
		case "wait":
			wait = a.Value.Duration()
		case "class":
			first = a.Value.String() == classNew.String()
		}
		return true
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byChat == nil {
		g.byChat = map[int64]grant{}
	}
	if _, seen := g.byChat[chat]; first && !seen {
		g.byChat[chat] = grant{asked: r.Time.Add(-wait), granted: r.Time}
	}
	return nil
}

func (g *grants) first(chat int64) (grant, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	x, ok := g.byChat[chat]
	return x, ok
}

// cpuTime is the user+system time of this process and of its waited-for
// children.
func cpuTime() (self, children time.Duration) {
	var s, c syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &s)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &c)
	tv := func(r syscall.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return tv(s), tv(c)
}

// load1 is the one-minute load average; 0 where unavailable.
func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}

// peakRSSMB is VmHWM from /proc/self/status, in MiB; 0 where unavailable.
func peakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
