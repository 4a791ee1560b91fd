package slack

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/slack/slacktest"
)

// BenchmarkLoad is the load run: 50 conversations in one workspace
// stream 2,000 text deltas each at once, through slack-go, the dispatcher
// and the fake agent CLI, against a fake Slack that enforces 50
// chat.update calls a minute (Tier 3's floor) and the streaming methods'
// tiers with 429s, once with slack.streaming edits and once native. It
// fails on any 429 or any final text that is not exact, and reports the
// median and p95 time from the agent writing its first text to that
// text's first visible call (the post, or the stream's start or first
// append), the time until every final text landed, the Slack calls per
// answer (every Web API call but auth.test and the socket's), and the
// test process's peak RSS (golem and the fake Slack; the agent processes
// are separate). Run it once:
//
//	go test ./adapters/slack -run '^$' -bench Load -benchtime 1x
//
// GOLEM_SLACK_LOAD=convs,deltas changes the size (e.g. 5,200 for a quick try).
func BenchmarkLoad(b *testing.B) {
	convs, deltas := 50, 2000
	if v := os.Getenv("GOLEM_SLACK_LOAD"); v != "" {
		c, d, _ := strings.Cut(v, ",")
		convs, _ = strconv.Atoi(c)
		deltas, _ = strconv.Atoi(d)
	}
	for _, mode := range []string{StreamEdits, StreamNative} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				runLoad(b, mode, convs, deltas)
			}
		})
	}
}

func runLoad(b *testing.B, mode string, convs, deltas int) {
	fake := slacktest.New(slacktest.Options{UpdatesPerMinute: 50, PingInterval: 5 * time.Second})
	defer fake.Close()
	bot := startBot(b, fake, filepath.Join(b.TempDir(), "agent.log"), botConfig{maxConcurrent: convs,
		edit: func(o *Options) { o.Streaming = mode }})
	defer bot.stop()

	channel := func(i int) string { return fmt.Sprintf("C%03d", i) }
	start := time.Now()
	for i := range convs {
		bot.say(slacktest.Event{Channel: channel(i), Text: fmt.Sprintf("%s !stamp\n!delta-rate 1ms %d", mention, deltas)})
	}
	tail := strings.Repeat("x", deltas)
	finals := func() int {
		n := 0
		for i := range convs {
			ms := fake.BotMessages(channel(i))
			if len(ms) > 0 && strings.HasPrefix(ms[0].Text, "stamp:") && strings.HasSuffix(ms[0].Text, tail) {
				n++
			}
		}
		return n
	}
	if !fake.Wait(10*time.Minute, func() bool { return finals() == convs }) {
		b.Fatalf("%d of %d final texts landed", finals(), convs)
	}
	all := time.Since(start)

	var latencies []time.Duration
	streamed := 0
	for i := range convs {
		shown := slices.DeleteFunc(fake.Calls(""), func(c slacktest.Call) bool {
			if c.Args["channel"] != channel(i) || c.Status != 200 || c.Error != "" {
				return true
			}
			switch c.Method {
			case "chat.postMessage", "chat.appendStream":
				return false
			case "chat.startStream":
				return c.Args["markdown_text"] == ""
			}
			return true
		})
		ms := fake.BotMessages(channel(i))
		if len(ms) != 1 || len(shown) == 0 {
			b.Fatalf("%s: %d bot messages, %d calls showing text; want one answer", channel(i), len(ms), len(shown))
		}
		if ms[0].ThreadTS != "" {
			streamed++
		}
		stamp, rest, ok := strings.Cut(strings.TrimPrefix(ms[0].Text, "stamp:"), "x")
		ns, err := strconv.ParseInt(stamp, 10, 64)
		if !ok || err != nil || "x"+rest != tail {
			b.Fatalf("%s: final text is not exact: %.80q…", channel(i), ms[0].Text)
		}
		latencies = append(latencies, shown[0].At.Sub(time.Unix(0, ns)))
		if os.Getenv("GOLEM_SLACK_LOAD_DEBUG") != "" {
			b.Logf("%s %s first %s after %v", mode, channel(i), shown[0].Method, shown[0].At.Sub(time.Unix(0, ns)))
		}
	}
	calls, byMethod := 0, map[string]int{}
	for _, c := range fake.Calls("") {
		if c.Method != "auth.test" && c.Method != "apps.connections.open" {
			calls++
			byMethod[c.Method]++
		}
	}
	b.Logf("%s: %d answers streamed; calls %v", mode, streamed, byMethod)
	slices.Sort(latencies)
	if n := fake.Count("", 429); n != 0 {
		b.Errorf("%d calls got 429", n)
	}
	b.ReportMetric(float64(latencies[len(latencies)/2])/1e6, "median-first-visible-ms")
	b.ReportMetric(float64(latencies[len(latencies)*95/100])/1e6, "p95-first-visible-ms")
	b.ReportMetric(all.Seconds(), "s-until-all-final")
	b.ReportMetric(float64(calls)/float64(convs), "calls/answer")
	b.ReportMetric(float64(fake.Count("chat.update", 200)), "chat.updates")
	b.ReportMetric(float64(streamed), "answers-streamed")
	b.ReportMetric(float64(fake.Count("", 429)), "429s")
	if kb := peakRSSKiB(); kb > 0 {
		b.ReportMetric(float64(kb)/1024, "peak-RSS-MiB")
	}
}

// peakRSSKiB is this process's VmHWM from /proc (0 where unavailable).
func peakRSSKiB() int {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}
