package telegram

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golem-chat/golem/adapters/telegram/telegramtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestRender(t *testing.T) {
	tests := []struct{ name, md, html string }{
		{"bold italic strike", "**b** *i* ~~s~~", "<b>b</b> <i>i</i> <s>s</s>"},
		{"escapes", "a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"markdown escapes and entities", `\*not\* &amp; &#65;`, "*not* &amp; A"},
		{"code span", "run `go test ./... <x>`", "run <code>go test ./... &lt;x&gt;</code>"},
		{"fence with language", "```go\nfmt.Println(\"<hi>\")\n```", "<pre><code class=\"language-go\">fmt.Println(\"&lt;hi&gt;\")</code></pre>"},
		{"fence without language", "```\nx := 1\n```", "<pre>x := 1</pre>"},
		{"odd language chars", "```c<script>\nx\n```", "<pre><code class=\"language-cscript\">x</code></pre>"},
		{"link", "[docs](https://go.dev/?a=1&b=\"2\")", `<a href="https://go.dev/?a=1&amp;b=&quot;2&quot;">docs</a>`},
		{"relative link keeps text", "[main.go](src/main.go)", "main.go"},
		{"javascript link", "[x](javascript:alert(1))", "x"},
		{"code in link", "[`f()`](https://x.dev)", `<a href="https://x.dev">f()</a>`},
		{"autolink", "see https://go.dev now", `see <a href="https://go.dev">https://go.dev</a> now`},
		{"heading", "# Title\n\ntext", "<b>Title</b>\n\ntext"},
		{"quote", "> quoted *it*\n> more", "<blockquote>quoted <i>it</i>\nmore</blockquote>"},
		{"nested quote flattened", "> a\n>> b", "<blockquote>a\nb</blockquote>"},
		{"bullets", "- one\n- two\n  - nested", "• one\n• two\n  • nested"},
		{"ordered", "3. c\n4. d", "3. c\n4. d"},
		{"tasks", "- [x] done\n- [ ] todo", "• ☑ done\n• ☐ todo"},
		{"table", "| a | b |\n|---|---|\n| 1 | 2 |", "<pre>a | b\n---\n1 | 2</pre>"},
		{"raw html shown", "a <span>b</span>", "a &lt;span&gt;b&lt;/span&gt;"},
		{"mention defused", "ask @alice", "ask @\u2060alice"},
		{"mention kept in code", "`@alice`", "<code>@alice</code>"},
		{"user link defused", "[Ann](tg://user?id=42) and [x]( TG://User?id=7)", "Ann and x"},
		{"hr", "a\n\n---\n\nb", "a\n\n——————\n\nb"},
		{"blank", "  \n ", "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := render(tt.md)
			if r.HTML != tt.html {
				t.Errorf("render(%q)\n got %q\nwant %q", tt.md, r.HTML, tt.html)
			}
			plain, err := telegramtest.ParseHTML(r.HTML)
			if err != nil {
				t.Fatalf("Telegram would reject %q: %v", r.HTML, err)
			}
			if plain != r.Plain {
				t.Errorf("plain text %q, Telegram shows %q", r.Plain, plain)
			}
		})
	}
}

// TestRenderGolden renders testdata/*.md and compares with the .html file
// beside it; go test -run TestRenderGolden -update rewrites them.
func TestRenderGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.md")
	if len(files) == 0 {
		t.Fatal("no golden inputs in testdata")
	}
	for _, in := range files {
		md, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		got := render(string(md)).HTML + "\n"
		want := strings.TrimSuffix(in, ".md") + ".html"
		if *update {
			if err := os.WriteFile(want, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		w, err := os.ReadFile(want)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(w) {
			t.Errorf("%s:\n got %s\nwant %s", in, got, w)
		}
		if _, err := telegramtest.ParseHTML(got); err != nil {
			t.Errorf("%s: Telegram would reject the rendering: %v", in, err)
		}
	}
}

func TestMeasureCountsUTF16AfterRendering(t *testing.T) {
	tests := []struct {
		md   string
		want int
	}{
		{"**ab**", 2},
		{"a &amp; b", 5},
		{"😀", 2},
		{"[x](https://example.com/long/url)", 1},
		{"```go\nx\n```", 1},
	}
	for _, tt := range tests {
		if got := measure(tt.md); got != tt.want {
			t.Errorf("measure(%q) = %d, want %d", tt.md, got, tt.want)
		}
	}
}

func TestChunksFitAndKeepText(t *testing.T) {
	long := strings.Repeat("word **bold** `code` 😀 ", 800) + "\n\n```go\n" + strings.Repeat("x := \"<&>\"\n", 900) + "```\n"
	cs := chunks(long, 4096)
	if len(cs) < 2 {
		t.Fatalf("%d chunks for a %d-unit text", len(cs), measure(long))
	}
	var all strings.Builder
	for _, c := range cs {
		checkChunk(t, c, 4096)
		all.WriteString(c.Plain)
	}
	if got, want := strings.Count(all.String(), "😀"), 800; got != want {
		t.Errorf("the chunks hold %d of %d emoji", got, want)
	}
	if got, want := strings.Count(all.String(), `x := "<&>"`), 900; got != want {
		t.Errorf("the chunks hold %d of %d code lines", got, want)
	}
}

func checkChunk(t testing.TB, c rendered, max int) {
	t.Helper()
	if c.length() > max {
		t.Fatalf("chunk of %d units > %d", c.length(), max)
	}
	plain, err := telegramtest.ParseHTML(c.HTML)
	if err != nil {
		t.Fatalf("broken HTML %q: %v", c.HTML, err)
	}
	if strings.TrimSpace(plain) != c.Plain {
		t.Fatalf("Telegram shows %q, we measured %q", plain, c.Plain)
	}
	if telegramtest.UTF16Len(plain) > max {
		t.Fatalf("Telegram counts %d units", telegramtest.UTF16Len(plain))
	}
}

func FuzzRenderSplit(f *testing.F) {
	for _, s := range []string{
		"**b** *i* `c` [l](https://x.y)", "```go\nx\n```", "> q\n>> q2", "- a\n  - b\n1. c",
		"| a | b |\n|--|--|\n| 1 | 2 |", "@user <b>&amp;", strings.Repeat("😀", 3000),
		"```\n" + strings.Repeat("<&>", 2000) + "\n```", "***x***~~y~~",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		for _, max := range []int{4096, 100} {
			for _, c := range chunks(md, max) {
				checkChunk(t, c, max)
			}
		}
	})
}
