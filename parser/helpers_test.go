package parser

import (
	"strings"
	"testing"
)

// fixtureParsers maps each folder of testdata/ to the parser of the CLI
// whose output it holds.
var fixtureParsers = map[string]func() Parser{"claude": NewClaudeCode, "cursor": NewCursor, "codex": NewCodex, "gemini": NewGemini, "opencode": NewOpenCode}

// parseLines feeds lines to p, one Parse call each, and returns the events
// as JSON lines joined with "\n".
func parseLines(t *testing.T, p Parser, lines ...string) string {
	t.Helper()
	var out []string
	for _, l := range lines {
		for _, e := range p.Parse([]byte(l)) {
			b, err := e.MarshalJSON()
			if err != nil {
				t.Fatalf("marshal %+v: %v", e, err)
			}
			out = append(out, string(b))
		}
	}
	return strings.Join(out, "\n")
}

// ruleCase is one table row of a parser rule: the lines of one run, and
// the events they must yield as JSON lines ("" for none).
type ruleCase struct {
	name  string
	lines []string
	want  string
}

func runRules(t *testing.T, newParser func() Parser, cases []ruleCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := parseLines(t, newParser(), c.lines...)
			if got != c.want {
				t.Errorf("events differ\ngot:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}
