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
// first text, or before any, to /ask, to a mention or in a DM: the answer
// is on the channel first (the interaction's response, or a reply to the
// message, with that text or the placeholder), the Write call's activity
// under it next, and the question last, under it too: in the thread
// started on the answer in a guild channel, as replies to the answer in a
// DM (where no thread can be started). The answer's first post is
// answered 429 once, as a busy channel's may be, so the question is ready
// well before the answer is on the channel.
func TestQuestionGoesUnderWhatTheAgentSaid(t *testing.T) {
	type ask struct {
		bottest.Ask
		how string // "/ask", "mention" or "DM"
	}
	var cases []ask
	for _, how := range []string{"/ask", "mention", "DM"} {
		for _, a := range bottest.Asks {
			a.Name = how + " " + a.Name
			cases = append(cases, ask{a, how})
		}
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			w := newWorld(t, discordtest.Options{}, Options{})
			slow := discordtest.Failure{Status: http.StatusTooManyRequests, RetryAfter: time.Second}
			var answerOf func(v discordtest.View) (discordtest.Message, bool)
			replyTo := func(channel, id string) func(v discordtest.View) (discordtest.Message, bool) {
				return func(v discordtest.View) (discordtest.Message, bool) {
					msgs := v.Messages(channel)
					i := slices.IndexFunc(msgs, func(m discordtest.Message) bool { return m.ReplyTo == id })
					if i < 0 {
						return discordtest.Message{}, false
					}
					return msgs[i], true
				}
			}
			switch tc.how {
			case "/ask":
				w.fake.Fail("PATCH /webhooks/", 1, slow)
				id := w.ask("u1", "c1", tc.Script)
				answerOf = func(v discordtest.View) (discordtest.Message, bool) {
					in, _ := v.Interaction(id)
					return v.Message(in.Original)
				}
			case "mention":
				w.fake.Fail("POST /channels/c1/messages$", 1, slow)
				answerOf = replyTo("c1", w.fake.Post(discordtest.UserMessage{Channel: "c1", Guild: "g1", User: "u1",
					Content: "<@" + w.bot + "> " + tc.Script, Mentions: []string{w.bot}}))
			case "DM":
				w.fake.DM("d1")
				w.fake.Fail("POST /channels/d1/messages$", 1, slow)
				answerOf = replyTo("d1", w.fake.Post(discordtest.UserMessage{Channel: "d1", User: "u1", Content: tc.Script}))
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
			// Where what goes under the answer is: its thread, or in a DM
			// the replies to it.
			under := func(m discordtest.Message) bool { return m.ChannelID == answer.Thread && answer.Thread != "" }
			if tc.how == "DM" {
				under = func(m discordtest.Message) bool { return m.ChannelID == "d1" && m.ReplyTo == answer.ID }
			}
			if answer.ID == "" || tc.how != "DM" && answer.Thread == "" {
				t.Fatalf("when the question came the answer was %+v: not posted, or no thread started on it", answer)
			}
			if !under(q) {
				t.Errorf("the question %+v is not under the answer %+v", q, answer)
			}
			at := slices.IndexFunc(all, func(m discordtest.Message) bool { return m.ID == q.ID }) // all is in posting order
			if !slices.ContainsFunc(all[:at], func(m discordtest.Message) bool { return under(m) && strings.Contains(m.Content, "Write") }) {
				t.Errorf("the Write call's activity was not posted under the answer before the question: %+v", all)
			}
			if got := textWhenAsked(w.fake, answer); !strings.Contains(got, tc.Shown) {
				t.Errorf("the answer read %q when the question was posted, want %q in it", got, tc.Shown)
			}

			i := strings.Index(q.Components, "golem:allow:")
			guild := "g1"
			if tc.how == "DM" {
				guild = ""
			}
			w.fake.Click(discordtest.Click{Guild: guild, Channel: q.ChannelID, Message: q.ID, User: "u1", CustomID: q.Components[i : i+len("golem:allow:")+8]})
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
