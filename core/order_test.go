package core_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/golem-chat/golem/parser"
)

// What the agent says before it asks comes before the question on every
// surface: on a platform the question goes under the answer's message
// (posted first, with the placeholder when nothing was said yet) and after
// the tool activity that led to it; on a stream the text and the tool call
// come before the permission_request.
func TestQuestionComesAfterWhatTheAgentSaid(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		said         bool // text comes before the question
	}{
		{"after its first text", "!text 40\n" + askWrite, true},
		{"before any text", askWrite, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &askRecorder{}
			h := newHarness(t, chatLimits, nil)
			rec.recorder = h.rec
			h.d.Register(rec)
			h.say("alice", tc.script)
			q := rec.question(t, 1)
			rec.mu.Lock()
			at := rec.askedAfter[0]
			rec.mu.Unlock()
			if at.order == 0 || q.Answer.ID != at.firstID {
				t.Fatalf("the question was posted under %+v with %d messages before it (the first %q): not under the answer",
					q.Answer, at.order, at.firstID)
			}
			if working := strings.Contains(at.firstText, "working"); working == tc.said {
				t.Errorf("the answer read %q when the question came", at.firstText)
			}
			if !slices.ContainsFunc(at.activity, func(s string) bool { return strings.Contains(s, "Write") }) {
				t.Errorf("the Write call's activity %q was not posted before its question", at.activity)
			}
		})
	}
}

func TestStreamGetsThePermissionRequestAfterWhatCameBefore(t *testing.T) {
	for _, script := range []string{"!text 40\n" + askWrite, askWrite} {
		h := newHarness(t, chatLimits, nil)
		q := h.sinkFrom("rec", "alice", script)
		var seen []parser.Type
		for !slices.Contains(seen, parser.PermissionRequest) {
			<-q.Ready()
			for _, ev := range q.Take() {
				seen = append(seen, ev.Type)
			}
		}
		ask := slices.Index(seen, parser.PermissionRequest)
		if !slices.Contains(seen[:ask], parser.ToolCall) ||
			strings.HasPrefix(script, "!text") && !slices.Contains(seen[:ask], parser.Text) {
			t.Errorf("%q: the stream got %v: the permission_request overtook what came before it", script, seen)
		}
		h.say("alice", "/stop")
	}
}
