package core_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/parser"
)

// blindStepper is a poster that is a Stepper but shows no step in the
// answer (Slack in edits mode): every call is an activity line.
type blindStepper struct{ *recorder }

func (blindStepper) Step(context.Context, core.MessageRef, core.Step) bool { return false }

// Activity lines held back for the post interval keep their place: a
// call made while they wait, and a warning among the calls, are posted
// after them, in the agent's order.
func TestHeldActivityKeepsTheAgentsOrder(t *testing.T) {
	a := blindStepper{newRecorder(t, core.Limits{MaxLen: 4000, MinPostInterval: time.Second})}
	r := core.NewReply(context.Background(), a, core.Place{Channel: "C1"}, discardLogger(), nil)
	call := func(id, cmd string) parser.Event {
		return parser.Event{Type: parser.ToolCall, ID: id, Name: "Bash", Args: []byte(`{"command":"` + cmd + `"}`)}
	}
	r.Add(parser.Event{Type: parser.Text, Content: "working"}, call("1", "echo A"))
	a.waitAll("echo A") // posted: the next must wait for the interval
	back := make(chan []string, 8)
	core.OnRequeue(r, func(lines []string) { back <- lines })
	r.Add(call("2", "echo B"))
	select { // the pump takes B and puts it back
	case lines := <-back:
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "echo B") }) {
			t.Fatalf("the pump put back %q, want B's line", lines)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pump did not put B back to wait for the post interval")
	}
	r.Add(parser.Event{Type: parser.Warning, Message: "warn W"}, call("3", "echo C"))
	r.Finish("")
	var all string
	a.mu.Lock()
	for _, act := range a.activity {
		all += act.text + "\n"
	}
	a.mu.Unlock()
	at := func(s string) int { return strings.Index(all, s) }
	order := []int{at("echo A"), at("echo B"), at("warn W"), at("echo C")}
	if slices.Contains(order, -1) || !slices.IsSorted(order) {
		t.Errorf("activity posted out of the agent's order (A, B, W, C):\n%s", all)
	}
}
