package discord

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/golem-chat/golem/core"
)

func TestRender(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain text is kept", "hello **world** and `code`", "hello **world** and `code`"},
		{"lists and links are kept", "- a\n- [b](https://x.y)\n\n1. c", "- a\n- [b](https://x.y)\n\n1. c"},
		{"headings 1-3 are kept", "# A\n## B\n### C", "# A\n## B\n### C"},
		{"deep headings become bold", "#### Deep\ntext\n###### Deeper ##", "**Deep**\ntext\n**Deeper**"},
		{"setext headings become atx", "Title\n=====\n\nSub\n---\nbody", "# Title\n\n## Sub\nbody"},
		{"everyone and here are broken", "hi @everyone and @here!", "hi @\u200beveryone and @\u200bhere!"},
		{"mentions in code are kept", "`@everyone` and\n```\n@here\n```", "`@everyone` and\n```\n@here\n```"},
		{"mentions in headings are broken", "#### @everyone", "**@\u200beveryone**"},
		{"emails are kept", "mail a@b.c", "mail a@b.c"},
		{
			"tables become code blocks",
			"before\n\n| name | n |\n|---|--:|\n| **a** | 1 |\n| `bb` | 22 |\n\nafter",
			"before\n\n```\nname | n\n-----+---\na    | 1\nbb   | 22\n```\n\nafter",
		},
		{
			"backticks in a table get a longer fence",
			"| a |\n|---|\n| ```x |",
			"````\na\n----\n```x\n````",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Render(tt.in); got != tt.want {
				t.Errorf("Render(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzRenderSplit checks that the pieces core's splitter makes with this
// adapter's measure never render past Discord's 2,000 characters, and that
// rendering never panics.
func FuzzRenderSplit(f *testing.F) {
	for _, s := range []string{
		"# a\n#### b\n| x | y |\n|---|---|\n| 1 | 2 |\n@everyone",
		strings.Repeat("| a | b |\n|---|---|\n| c | d |\n", 200),
		"```go\n" + strings.Repeat("fmt.Println(\"@here\")\n", 300) + "```\n",
		strings.Repeat("@everyone ", 500),
		strings.Repeat("x", 4500),
		"Title\n===\n" + strings.Repeat("word ", 900),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		for _, piece := range core.Split(s, MaxLen, Measure) {
			if n := utf8.RuneCountInString(Render(piece)); n > MaxLen {
				t.Fatalf("a piece renders to %d characters, over %d: %q", n, MaxLen, piece)
			}
		}
	})
}
