package slack

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/mrkdwn")

// TestMrkdwnGolden renders every testdata/mrkdwn/*.md and compares it with
// the .mrkdwn file beside it (go test -run Golden -update rewrites them).
func TestMrkdwnGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/mrkdwn/*.md")
	if len(files) == 0 {
		t.Fatal("no golden inputs")
	}
	for _, in := range files {
		name := strings.TrimSuffix(filepath.Base(in), ".md")
		t.Run(name, func(t *testing.T) {
			md, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			got := Mrkdwn(string(md))
			golden := strings.TrimSuffix(in, ".md") + ".mrkdwn"
			if *update {
				if err := os.WriteFile(golden, []byte(got+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got+"\n" != string(want) {
				t.Errorf("Mrkdwn(%s) =\n%s\nwant\n%s", in, got, want)
			}
			checkSafe(t, got)
		})
	}
}

func TestMrkdwn(t *testing.T) {
	tests := []struct{ in, want string }{
		{"**bold**", "*bold*"},
		{"*it*", "_it_"},
		{"~~gone~~", "~gone~"},
		{"`a<b`", "`a&lt;b`"},
		{"# Head", "*Head*"},
		{"[x](https://e.com)", "<https://e.com|x>"},
		{"[https://e.com](https://e.com)", "<https://e.com>"},
		{"<!here>", "&lt;!here&gt;"},
		{"ping @here now", "ping @\u2060here now"},
		{"mail me@everyone.org", "mail <mailto:me@everyone.org>"},
		{"tell @everyone!", "tell @\u2060everyone!"},
		{"- a\n  - b", "• a\n    • b"},
		{"<@U0123>", "&lt;@U0123&gt;"},
		{"a & b", "a &amp; b"},
		{"- a\n- b", "• a\n• b"},
		{"1. a\n1. b", "1. a\n2. b"},
		{"> q", "> q"},
		{"", ""},
		{"**", "**"},
		{"```\nx\n```", "```\nx\n```"},
	}
	for _, tt := range tests {
		if got := Mrkdwn(tt.in); got != tt.want {
			t.Errorf("Mrkdwn(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// checkSafe fails if s could ping or resolve anything in Slack: every '<'
// must open one of our http(s)/mailto links, and the bare mass mentions
// must be defused.
func checkSafe(t *testing.T, s string) {
	t.Helper()
	for i := 0; i < len(s); i++ {
		if s[i] != '<' {
			continue
		}
		rest := s[i:]
		if !strings.HasPrefix(rest, "<http://") && !strings.HasPrefix(rest, "<https://") && !strings.HasPrefix(rest, "<mailto:") {
			t.Fatalf("unsafe '<' at %d in %q", i, s)
		}
		end := strings.IndexByte(rest, '>')
		if end < 0 {
			t.Fatalf("unclosed link at %d in %q", i, s)
		}
		if strings.ContainsAny(rest[1:end], "<\n") {
			t.Fatalf("broken link %q", rest[:end+1])
		}
	}
	// Outside links, the bare mass mentions must be defused.
	var outside strings.Builder
	for rest := s; rest != ""; {
		i := strings.IndexByte(rest, '<')
		if i < 0 {
			outside.WriteString(rest)
			break
		}
		outside.WriteString(rest[:i])
		rest = rest[i+strings.IndexByte(rest[i:], '>')+1:]
	}
	low := strings.ToLower(outside.String())
	for _, w := range []string{"@channel", "@here", "@everyone"} {
		if strings.Contains(low, w) {
			t.Fatalf("%s not defused in %q", w, s)
		}
	}
}

func FuzzMrkdwn(f *testing.F) {
	files, _ := filepath.Glob("testdata/mrkdwn/*.md")
	for _, in := range files {
		b, _ := os.ReadFile(in)
		f.Add(string(b))
	}
	f.Add("[a](https://x/<!channel>|y) <@U1> @here **`<!here>`**")
	f.Fuzz(func(t *testing.T, md string) {
		checkSafe(t, Mrkdwn(md))
	})
}
