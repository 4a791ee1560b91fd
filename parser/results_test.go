package parser

import "testing"

// TestTextDeltaAllocatesOnlyItsText: a streamed text delta, the line a run
// prints most, costs one allocation, its text; the slice of events is the
// parser's, reused from line to line.
func TestTextDeltaAllocatesOnlyItsText(t *testing.T) {
	for name, tc := range map[string]struct {
		p           Parser
		start, line string
	}{
		"cursor": {p: NewCursor(),
			line: `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":" parser"}]},"session_id":"c6b62c6f","timestamp_ms":1764400000001}`},
		"claude": {p: NewClaudeCode(),
			start: `{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1"}}}`,
			line:  `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" parser"}},"session_id":"0b9a2f6e"}`},
	} {
		tc.p.Parse([]byte(tc.start))
		line := []byte(tc.line)
		var first []Event
		allocs := testing.AllocsPerRun(100, func() {
			evs := tc.p.Parse(line)
			if len(evs) != 1 || evs[0].Type != Text || evs[0].Content != " parser" {
				t.Fatalf("%s: %+v, want the text delta", name, evs)
			}
			if first == nil {
				first = evs
			} else if &first[0] != &evs[0] {
				t.Fatalf("%s: a new slice of events for each line", name)
			}
		})
		if allocs > 1 {
			t.Errorf("%s: %v allocations per text delta, want 1 (its text)", name, allocs)
		}
	}
}

// TestEventsOfTheLastLineAreDropped: the reused slice keeps nothing of a
// line's events once the next line is parsed, and a line without events
// gives none of the last line's.
func TestEventsOfTheLastLineAreDropped(t *testing.T) {
	p := NewClaudeCode().(*ClaudeCode)
	two := p.Parse([]byte(`{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}`))
	if len(two) != 2 {
		t.Fatalf("%+v, want a text and a tool call", two)
	}
	if evs := p.Parse([]byte(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"a.txt"}]}}`)); len(evs) != 1 || evs[0].Type != ToolResult {
		t.Fatalf("%+v, want the tool result alone", evs)
	}
	if held := two[:2]; held[1].Type != "" || held[1].Args != nil {
		t.Errorf("the slice still holds the last line's tool call: %+v", held[1])
	}
	if evs := p.Parse([]byte(`{"type":"system","subtype":"init","session_id":"s"}`)); evs != nil {
		t.Errorf("a line without events gave %+v", evs)
	}
}
