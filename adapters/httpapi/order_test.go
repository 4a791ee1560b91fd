package httpapi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/golem-chat/golem/internal/bottest"
)

// The stream carries the events in the order the agent printed them: what
// it said, its Write call, then the permission_request (right after its
// first text, or before any text), and once allowed the decision and the
// rest of the answer. Through the real HTTP stream, the real dispatcher and
// the fake agent.
func TestStreamKeepsTheAgentsOrderAroundAQuestion(t *testing.T) {
	for _, tc := range bottest.Asks {
		want := []string{"tool_call", "permission_request"} // the event types up to the request, repeats joined
		if tc.Shown != "working" {
			want = append([]string{"text"}, want...)
		}
		t.Run(tc.Name, func(t *testing.T) {
			base := serveDispatcher(t)
			body, _ := json.Marshal(chatRequest{Conversation: "order", Text: tc.Script})
			res := postChat(t, base, string(body))
			if res.StatusCode != 200 {
				t.Fatalf("POST /v1/chat: %d", res.StatusCode)
			}
			sse := newSSEReader(res.Body)
			var before []wireEvent
			var last string // the payload of the latest event
			for len(before) == 0 || before[len(before)-1].Type != "permission_request" {
				p, err := sse.next()
				if err != nil {
					t.Fatalf("the stream ended before a permission_request, after %+v: %v", before, err)
				}
				var e wireEvent
				if err := json.Unmarshal([]byte(p), &e); err != nil {
					t.Fatal(err)
				}
				before, last = append(before, e), p
			}
			if got := joined(before); !slices.Equal(got, want) {
				t.Fatalf("the stream got %v before the question, want %v", got, want)
			}
			if i := slices.IndexFunc(before, func(e wireEvent) bool { return e.Type == "tool_call" }); before[i].Name != "Write" {
				t.Errorf("the tool call before the question is %+v", before[i])
			}
			var req struct{ ID string }
			_ = json.Unmarshal([]byte(last), &req)
			if req.ID == "" {
				t.Fatal("the permission_request has no id")
			}
			if code := postPermission(t, base, `{"conversation":"order","id":"`+req.ID+`","decision":"allow"}`); code != 200 {
				t.Fatalf("allow: %d", code)
			}
			after := decodeEvents(t, sse.readAll(t))
			if after[0].Type != "permission_decision" {
				t.Errorf("after the request the stream got %v first, want the decision", joined(after))
			}
			decided := slices.IndexFunc(after, func(e wireEvent) bool { return e.Type == "permission_decision" })
			if !strings.Contains(answerText(after[decided:]), "echo: written") || after[len(after)-1].Type != "done" {
				t.Errorf("after the decision the stream got %+v", after)
			}
		})
	}
}

// joined is the events' types with repeats in a row joined: text deltas
// are one "text".
func joined(events []wireEvent) []string {
	var out []string
	for _, e := range events {
		if len(out) == 0 || out[len(out)-1] != e.Type {
			out = append(out, e.Type)
		}
	}
	return out
}
