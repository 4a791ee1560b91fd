package discord

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/discord/discordtest"
	"github.com/golem-chat/golem/internal/bottest"
)

// TestQuestionGoesUnderWhatTheAgentSaid: the agent asks right after its
// first text, or before any, to /ask or to a mention: the answer is on the
// channel first (the interaction's response, or a reply to the mention,
// with that text or the placeholder), the Write call's activity in the
// thread started on the answer next, and the question last, in that
// thread. The answer's first post is answered 429 once, as a busy
// channel's may be, so the question is ready well before the answer is on
// the channel.
func TestQuestionGoesUnderWhatTheAgentSaid(t *testing.T) {
	type ask struct {
		bottest.Ask
		slash bool // /ask, not a mention
	}
	var cases []ask
	for _, slash := range []bool{true, false} {
		for _, a := range bottest.Asks {
			a.Name = map[bool]string{true: "/ask ", false: "mention "}[slash] + a.Name
			cases = append(cases, ask{a, slash})
		}
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			w := newWorld(t, discordtest.Options{}, Options{})
			slow := discordtest.Failure{Status: http.StatusTooManyRequests, RetryAfter: time.Second}
			var answerOf func(v discordtest.View) (discordtest.Message, bool)
			if tc.slash {
				w.fake.Fail("PATCH /webhooks/", 1, slow)
				id := w.ask("u1", "c1", tc.Script)
				answerOf = func(v discordtest.View) (discordtest.Message, bool) {
					in, _ := v.Interaction(id)
					return v.Message(in.Original)
				}
			} else {
				w.fake.Fail("POST /channels/c1/messages$", 1, slow)
				id := w.fake.Post(discordtest.UserMessage{Channel: "c1", Guild: "g1", User: "u1",
					Content: "<@" + w.bot + "> " + tc.Script, Mentions: []string{w.bot}})
				answerOf = func(v discordtest.View) (discordtest.Message, bool) {
					i := slices.IndexFunc(v.Messages("c1"), func(m discordtest.Message) bool { return m.ReplyTo == id })
					if i < 0 {
						return discordtest.Message{}, false
					}
					return v.Messages("c1")[i], true
				}
			}
			var q, answer discordtest.Message
			var all []discordtest.Message
			if !w.fake.Wait(wait, func(v discordtest.View) bool {
				all = v.All()
				i := slices.IndexFunc(all, func(m discordtest.Message) bool { return strings.Contains(m.Components, "golem:allow:") })
				if i < 0 {
					return false
				}
				q = all[i]
				answer, _ = answerOf(v)
				return true
			}) {
				t.Fatalf("no question; bot messages: %+v", all)
			}
			if answer.ID == "" || answer.Thread == "" {
				t.Fatalf("when the question came the answer was %+v: not posted, or no thread started on it", answer)
			}
			if q.ChannelID != answer.Thread {
				t.Errorf("the question is in channel %q, want the answer's thread %q", q.ChannelID, answer.Thread)
			}
			thread := w.fake.Messages(answer.Thread) // in posting order
			at := slices.IndexFunc(thread, func(m discordtest.Message) bool { return m.ID == q.ID })
			if !slices.ContainsFunc(thread[:max(at, 0)], func(m discordtest.Message) bool { return strings.Contains(m.Content, "Write") }) {
				t.Errorf("the Write call's activity was not posted in the answer's thread before the question: %+v", thread)
			}
			if got := textWhenAsked(w.fake, answer); !strings.Contains(got, tc.Shown) {
				t.Errorf("the answer read %q when the question was posted, want %q in it", got, tc.Shown)
			}

			i := strings.Index(q.Components, "golem:allow:")
			w.fake.Click(discordtest.Click{Guild: "g1", Channel: q.ChannelID, Message: q.ID, User: "u1", CustomID: q.Components[i : i+len("golem:allow:")+8]})
			if !w.fake.Wait(wait, func(v discordtest.View) bool {
				m, _ := v.Message(answer.ID)
				return strings.HasSuffix(m.Content, "echo: written")
			}) {
				m, _ := w.fake.Message(answer.ID)
				t.Errorf("the answer the question went under ends %q, want the agent's answer after the allow", m.Content)
			}
		})
	}
}

// textWhenAsked is what answer read when the question (the post with
// buttons) was made: the content of its post or interaction response and
// of its edits before the question, whichever came last.
func textWhenAsked(fake *discordtest.Server, answer discordtest.Message) string {
	var text string
	for _, c := range fake.Calls("") {
		content, has := c.Body["content"].(string)
		if c.Status >= 300 || !has {
			continue
		}
		switch {
		case c.Method == http.MethodPost && c.Body["components"] != nil:
			return text
		case c.Method == http.MethodPatch && strings.HasSuffix(c.Path, "/messages/@original"),
			c.Method == http.MethodPatch && c.Path == "/channels/"+answer.ChannelID+"/messages/"+answer.ID,
			c.Method == http.MethodPost && c.Path == "/channels/"+answer.ChannelID+"/messages" && text == "":
			text = content
		}
	}
	return text
}
