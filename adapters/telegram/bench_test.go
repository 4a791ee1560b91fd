package telegram

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/telegram/telegramtest"
)

// BenchmarkStreaming100Chats is the load figure of the Telegram adapter:
// 100 private chats stream an answer of 2,000 one-character deltas each at
// once, through the real library, core and the fake agent, against the
// fake Bot API enforcing 1 message or edit a second per chat and 30
// requests a second overall. It reports 429 answers (want 0), answers not
// exact at the end (want 0), the median and 90th percentile of the first
// visible text after the engine's first text (the fake agent stamps it),
// and the process's peak RSS (bot and fake server together).
//
// "burst" starts all 100 turns in the same instant, so the first messages
// alone need 100 requests of the 30/s budget; "staggered" lets the chats
// arrive 100 ms apart.
//
//	go test -run '^$' -bench Streaming100Chats -benchtime 1x ./adapters/telegram/
func BenchmarkStreaming100Chats(b *testing.B) {
	for _, tc := range []struct {
		name  string
		every time.Duration
	}{{"burst", 0}, {"staggered", 100 * time.Millisecond}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				streamChats(b, 100, 2000, tc.every)
			}
		})
	}
}

var stampRE = regexp.MustCompile(`^stamp:(\d+)`)

func streamChats(b *testing.B, chats, deltas int, every time.Duration) {
	st := newStack(b, telegramtest.Options{EnforceRates: true, PerChatInterval: time.Second, GlobalPerSecond: 30})
	st.allow = []string{"telegram:*"}
	st.up()
	b.Cleanup(st.stop)
	prompt := fmt.Sprintf("!stamp\n!delta-rate 1ms %d", deltas)
	want := strings.Repeat("x", deltas)
	for i := range chats {
		st.s.PushPrivate(telegramtest.User{ID: int64(1000 + i), Username: fmt.Sprintf("u%d", i)}, prompt)
		if every > 0 {
			time.Sleep(every) // the arrival pattern, not a wait for a result
		}
	}
	exact := func(m telegramtest.Message) bool {
		return stampRE.MatchString(m.Text) && strings.HasSuffix(strings.ReplaceAll(m.Text, "\n", ""), want) &&
			len(strings.TrimLeft(stampRE.ReplaceAllString(m.Text, ""), "\n ")) == deltas
	}
	done := func() int {
		n := 0
		for i := range chats {
			ms := st.s.BotMessages(int64(1000 + i))
			if len(ms) == 1 && exact(ms[0]) {
				n++
			}
		}
		return n
	}
	start := time.Now()
	st.s.WaitUntil(b, 5*time.Minute, "every final text", func() bool { return done() == chats })
	elapsed := time.Since(start)

	var lat []time.Duration
	first := map[string]bool{}
	for _, c := range st.s.Calls("sendMessage") {
		chat := c.Params.Get("chat_id")
		m := stampRE.FindStringSubmatch(c.Params.Get("text"))
		if first[chat] || m == nil {
			continue
		}
		first[chat] = true
		ns, _ := strconv.ParseInt(m[1], 10, 64)
		lat = append(lat, c.At.Sub(time.Unix(0, ns)))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(st.s.TooMany()), "429s")
	b.ReportMetric(float64(chats-done()), "inexact")
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "first-visible-median-ms")
	b.ReportMetric(float64(lat[len(lat)*9/10].Milliseconds()), "first-visible-p90-ms")
	b.ReportMetric(elapsed.Seconds(), "s-to-all-final")
	b.ReportMetric(float64(len(st.s.Calls("editMessageText"))), "edits")
	b.ReportMetric(peakRSSMB(), "peak-RSS-MB")
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
