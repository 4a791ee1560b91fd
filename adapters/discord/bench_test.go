package discord

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/discord/discordtest"
	"github.com/golem-chat/golem/core"
)

// BenchmarkLoad is the load figure: 50 channels run /ask at once,
// each answer 2,000 one-character deltas (5 ms apart) from the fake agent,
// against the fake Discord enforcing 5 requests per 5 s per channel. It
// reports 429s (want 0), answers whose final text is not exact (want 0),
// the median and worst time from the engine's first text (a "stamp:" with
// its clock) to the first request carrying it reaching Discord, and the
// process's peak RSS (bot, core and fake Discord together; the agent
// processes are separate).
//
//	go test -run '^$' -bench BenchmarkLoad -benchtime 1x ./adapters/discord/
func BenchmarkLoad(b *testing.B) {
	const channels, deltas = 50, 2000
	for range b.N {
		w := newWorldWith(b, discordtest.Options{ChannelLimit: 5, ChannelWindow: 5 * time.Second}, Options{},
			func(o *core.Options) { o.MaxConcurrent = channels })
		ids := make([]string, channels)
		start := time.Now()
		for i := range channels {
			ids[i] = w.ask("u1", fmt.Sprintf("c%d", i), fmt.Sprintf("!stamp\n!delta-rate 5ms %d", deltas))
		}
		tail := strings.Repeat("x", deltas)
		exact := func(v discordtest.View, i int) bool {
			var all strings.Builder
			for _, m := range v.Messages(fmt.Sprintf("c%d", i)) {
				all.WriteString(m.Content)
			}
			s := all.String()
			return strings.HasPrefix(s, "stamp:") && strings.HasSuffix(s, tail) && len(s) == len("stamp:")+19+deltas
		}
		done := w.fake.Wait(5*time.Minute, func(v discordtest.View) bool {
			for i := range channels {
				if !exact(v, i) {
					return false
				}
			}
			return true
		})
		elapsed := time.Since(start)
		wrong := 0
		w.fake.Wait(0, func(v discordtest.View) bool {
			for i := range channels {
				if !exact(v, i) {
					wrong++
				}
			}
			return true
		})
		if !done {
			b.Errorf("%d of %d answers not exact after 5 minutes", wrong, channels)
		}
		// First visible: the first request whose content holds the stamp.
		var lat []time.Duration
		seen := map[string]bool{}
		for _, c := range w.fake.Calls("") {
			content, _ := c.Body["content"].(string)
			ns, ok := strings.CutPrefix(content, "stamp:")
			if !ok || len(ns) < 19 || seen[ns[:19]] {
				continue
			}
			seen[ns[:19]] = true
			if t, err := strconv.ParseInt(ns[:19], 10, 64); err == nil {
				lat = append(lat, c.At.Sub(time.Unix(0, t)))
			}
		}
		slices.Sort(lat)
		if len(lat) != channels {
			b.Errorf("found the first text of %d answers, want %d", len(lat), channels)
		}
		if len(lat) > 0 {
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "first-visible-median-ms")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "first-visible-max-ms")
		}
		b.ReportMetric(float64(w.fake.RateLimited()), "429s")
		b.ReportMetric(float64(wrong), "inexact-answers")
		b.ReportMetric(elapsed.Seconds(), "s-to-all-final")
		b.ReportMetric(float64(len(w.fake.Calls(""))), "requests")
		if rss := peakRSS(); rss > 0 {
			b.ReportMetric(float64(rss)/1024, "peak-RSS-MB")
		}
	}
}

// peakRSS reads the process's peak resident set (VmHWM) in KiB; 0 where
// /proc is not available.
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}
