package slack

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/slack/slacktest"
	"github.com/golem-chat/golem/internal/bottest"
)

// TestE2EQuestionGoesUnderWhatTheAgentSaid: the agent asks right after its
// first text, or before any: the answer's message is posted first (with
// that text, or the placeholder), the Write call's activity in its thread
// next, and the question last, in the answer's thread (thread_ts = the
// answer's ts), never at the channel's top level. With native streaming in
// a DM the answer is a streamed reply in the asking message's thread
// (started empty when the agent said nothing yet), and the question comes
// after it in that thread.
func TestE2EQuestionGoesUnderWhatTheAgentSaid(t *testing.T) {
	type ask struct {
		bottest.Ask
		dm bool // a DM with native streaming, not a mention in C1
	}
	var cases []ask
	for _, dm := range []bool{false, true} {
		for _, a := range bottest.Asks {
			a.Name = map[bool]string{false: "mention ", true: "native DM "}[dm] + a.Name
			cases = append(cases, ask{a, dm})
		}
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			cfg, ch, ev := botConfig{}, "C1", slacktest.Event{Channel: "C1", Text: mention + " " + tc.Script}
			if tc.dm {
				cfg.edit, ch, ev = native, "D1", slacktest.Event{Type: "message", ChannelType: "im", Channel: "D1", Text: tc.Script}
			}
			b := newE2E(t, cfg)
			d := b.say(ev)
			var q slacktest.Message
			if !b.fake.Wait(20*time.Second, func() bool {
				for _, m := range b.fake.BotMessages(ch) {
					if strings.Contains(m.Blocks, `"actions"`) {
						q = m
						return true
					}
				}
				return false
			}) {
				t.Fatalf("no question; bot messages: %+v", b.fake.BotMessages(ch))
			}
			msgs := b.fake.BotMessages(ch) // in posting order
			at := slices.IndexFunc(msgs, func(m slacktest.Message) bool { return m.TS == q.TS })
			answer := msgs[0]
			// In C1 the answer is at the top level and what goes under it is
			// in its thread; in the DM all is in the asking message's thread.
			answerThread, thread := "", answer.TS
			if tc.dm {
				answerThread, thread = d.TS, d.TS
			}
			if at == 0 || answer.ThreadTS != answerThread {
				t.Fatalf("the first bot message %+v is not the answer, posted before the question", answer)
			}
			if q.ThreadTS != thread {
				t.Errorf("the question is in thread %q, want the answer's %q (the asking message is %q)", q.ThreadTS, thread, d.TS)
			}
			if !slices.ContainsFunc(msgs[:at], func(m slacktest.Message) bool {
				return m.TS != answer.TS && m.ThreadTS == thread && strings.Contains(m.Text, "Write")
			}) {
				t.Errorf("the Write call's activity was not posted in the answer's thread before the question: %+v", msgs[:at])
			}
			got := textWhenAsked(b.fake, answer.TS)
			if tc.dm && tc.Shown == "working" {
				// A stream starts without golem's placeholder: Slack shows
				// its own working state until the first text.
				if got != "" {
					t.Errorf("the stream read %q when the question was posted, want it started empty", got)
				}
			} else if !strings.Contains(got, tc.Shown) {
				t.Errorf("the answer read %q when the question was posted, want %q in it", got, tc.Shown)
			}

			i := strings.Index(q.Blocks, "golem:allow:")
			if _, err := b.fake.Click("U1", ch, q.ThreadTS, q.TS, q.Blocks[i:i+len("golem:allow:")+8]); err != nil {
				t.Fatal(err)
			}
			if !b.fake.Wait(20*time.Second, func() bool {
				m, _ := b.fake.Message(ch, answer.TS)
				return strings.HasSuffix(m.Text, "echo: written")
			}) {
				m, _ := b.fake.Message(ch, answer.TS)
				t.Errorf("the answer the question went under ends %q, want the agent's answer after the allow", m.Text)
			}
		})
	}
}

// textWhenAsked is what the answer at ts read when the question (the
// post with buttons) was posted: its own post (or stream) and the edits
// (or appends) before it.
func textWhenAsked(fake *slacktest.Server, ts string) string {
	var text string
	for _, c := range fake.Calls("") {
		switch {
		case c.Method == "chat.postMessage" && strings.Contains(c.Args["blocks"], `"actions"`):
			return text
		case c.Method == "chat.postMessage" && c.Args["thread_ts"] == "" && text == "":
			text = c.Args["text"]
		case c.Method == "chat.update" && c.Args["ts"] == ts && c.Error == "":
			text = c.Args["text"]
		case c.Method == "chat.startStream" && text == "":
			text = c.Args["markdown_text"]
		case c.Method == "chat.appendStream" && c.Args["ts"] == ts && c.Error == "":
			text += c.Args["markdown_text"]
		}
	}
	return text
}
