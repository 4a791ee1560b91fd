package slack

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/slack/slacktest"
)

// TestE2ENativeEndSurvivesALimitOrAFailure: a 429 (with Retry-After) or
// 500s on chat.stopStream and on chat.update lose nothing of the answer's
// end, which rests on End (the stop carries the last text): the thread
// ends with the full exact final text, its stream stopped. A single 429 or
// 500 is the adapter's retry's; a 429 and then more 500s than it takes
// make End fail, and core repeats End as it repeats a final edit.
func TestE2ENativeEndSurvivesALimitOrAFailure(t *testing.T) {
	limited := slacktest.Failure{Status: http.StatusTooManyRequests, RetryAfter: 1}
	failed := slacktest.Failure{Status: http.StatusInternalServerError}
	for _, tt := range []struct {
		name     string
		failures int // 500s after the 429
	}{
		{"a 429", 0},
		{"a 429 and a 500", 1},
		{"a 429 and 500s past the adapter's retries", maxFailures},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := newE2E(t, botConfig{edit: native})
			for _, method := range []string{"chat.stopStream", "chat.update"} {
				b.fake.Fail(method, 1, limited)
				b.fake.Fail(method, tt.failures, failed)
			}
			d := b.say(slacktest.Event{Channel: "C1", Text: mention + " !delta-rate 10ms 50\ndone"})
			want := strings.Repeat("x", 50) + "echo: done"
			var got slacktest.Message
			if !b.fake.Wait(30*time.Second, func() bool {
				ms := b.fake.BotMessages("C1")
				i := slices.IndexFunc(ms, func(m slacktest.Message) bool { return m.ThreadTS == d.TS })
				if i >= 0 {
					got = ms[i]
				}
				return i >= 0 && got.Text == want && !got.Streaming
			}) {
				t.Fatalf("the answer is %+v, want %q, stopped", got, want)
			}
			for _, m := range readBack(t, b.fake, "C1", d.TS) {
				if m.Timestamp == got.TS && m.Text != want {
					t.Errorf("read back, the answer is %q, want %q", m.Text, want)
				}
			}
		})
	}
}
