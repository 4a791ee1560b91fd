package telegram

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/golem-chat/golem/core"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// markdown parses the agent's CommonMark plus GitHub's extensions (tables,
// strikethrough, task lists, bare links).
var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

// rendered is one message in Telegram's HTML parse mode: HTML to send and
// Plain, the text a user sees (what Telegram measures, and what is sent
// when Telegram rejects the HTML).
type rendered struct {
	HTML  string
	Plain string
}

// length is Telegram's measure of the message: UTF-16 code units of the
// visible text.
func (r rendered) length() int { return utf16Len(r.Plain) }

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// render turns Markdown into Telegram HTML by walking goldmark's tree. It
// emits only the tags Telegram accepts (b, i, s, code, pre, a, blockquote),
// nested as Telegram allows; lists become text bullets, headings bold,
// tables a preformatted block. Text is escaped (&, <, >), @mentions are
// defused with a word joiner and links to users (tg://user?id=) become
// their text, so an answer never pings anyone. The result is never empty: blank Markdown renders as "…".
func render(md string) rendered {
	src := []byte(md)
	doc := markdown.Parser().Parse(text.NewReader(src))
	w := &writer{src: src}
	w.blocks(doc, "\n\n")
	r := rendered{HTML: strings.TrimSpace(w.html.String()), Plain: strings.TrimSpace(w.plain.String())}
	if r.Plain == "" {
		r = rendered{HTML: "…", Plain: "…"}
	}
	return r
}

type writer struct {
	src   []byte
	html  strings.Builder
	plain strings.Builder
	// What encloses the current node, for Telegram's nesting rules.
	inLink, inQuote bool
	indent          string // list nesting
}

// tag writes markup that is not visible text.
func (w *writer) tag(s string) { w.html.WriteString(s) }

// text writes visible text, escaped, with @mentions defused unless it is
// code (Telegram does not parse mentions inside code).
func (w *writer) text(s string, code bool) {
	for i, r := range s {
		switch r {
		case '&':
			w.html.WriteString("&amp;")
		case '<':
			w.html.WriteString("&lt;")
		case '>':
			w.html.WriteString("&gt;")
		default:
			w.html.WriteRune(r)
		}
		w.plain.WriteRune(r)
		if r == '@' && !code && i+1 < len(s) && isWordByte(s[i+1]) {
			w.html.WriteString("\u2060")
			w.plain.WriteString("\u2060")
		}
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// blocks renders n's children, sep between them.
func (w *writer) blocks(n ast.Node, sep string) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if c != n.FirstChild() {
			w.text(sep, true)
		}
		w.block(c)
	}
}

func (w *writer) block(n ast.Node) {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		w.inlines(n)
	case *ast.Heading:
		w.tag("<b>")
		w.inlines(n)
		w.tag("</b>")
	case *ast.ThematicBreak:
		w.text("——————", true)
	case *ast.FencedCodeBlock:
		w.code(string(n.Language(w.src)), n.Lines())
	case *ast.CodeBlock:
		w.code("", n.Lines())
	case *ast.HTMLBlock:
		lines := n.Lines()
		var b strings.Builder
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			b.Write(seg.Value(w.src))
		}
		if n.HasClosure() {
			b.Write(n.ClosureLine.Value(w.src))
		}
		w.text(strings.TrimRight(b.String(), "\n"), false)
	case *ast.Blockquote:
		if w.inQuote { // Telegram does not nest quotes
			w.blocks(n, "\n")
			return
		}
		w.inQuote = true
		w.tag("<blockquote>")
		w.blocks(n, "\n")
		w.tag("</blockquote>")
		w.inQuote = false
	case *ast.List:
		w.list(n)
	case *east.Table:
		w.table(n)
	default:
		w.blocks(n, "\n")
	}
}

// code renders a code block as <pre>, with the language when given.
func (w *writer) code(lang string, lines *text.Segments) {
	var b strings.Builder
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		b.Write(seg.Value(w.src))
	}
	body := strings.TrimRight(b.String(), "\n")
	if body == "" {
		body = " "
	}
	lang = strings.Map(func(r rune) rune {
		if r < 128 && (isWordByte(byte(r)) || r == '-' || r == '+' || r == '#' || r == '.') {
			return r
		}
		return -1
	}, lang)
	if lang != "" {
		w.tag(`<pre><code class="language-` + lang + `">`)
		w.text(body, true)
		w.tag("</code></pre>")
		return
	}
	w.tag("<pre>")
	w.text(body, true)
	w.tag("</pre>")
}

// maxIndent bounds list indentation, so pathological nesting cannot blow
// up the rendered length.
const maxIndent = 24

func (w *writer) list(l *ast.List) {
	num := l.Start
	outer := w.indent
	first := true
	for item := l.FirstChild(); item != nil; item = item.NextSibling() {
		if !first {
			w.text("\n", true)
		}
		first = false
		bullet := "• "
		if l.IsOrdered() {
			bullet = strconv.Itoa(num) + ". "
			num++
		}
		w.text(outer+bullet, true)
		w.indent = outer
		if len(outer) < maxIndent { // deeper lists stop indenting
			w.indent = outer + strings.Repeat(" ", len([]rune(bullet)))
		}
		for c := item.FirstChild(); c != nil; c = c.NextSibling() {
			if c != item.FirstChild() {
				w.text("\n", true)
				if _, nested := c.(*ast.List); !nested {
					w.text(w.indent, true)
				}
			}
			if nested, ok := c.(*ast.List); ok {
				w.list(nested)
				continue
			}
			w.block(c)
		}
		w.indent = outer
	}
}

// table renders a GFM table as rows of cells separated by " | ", in a
// preformatted block when Telegram allows one here.
func (w *writer) table(t *east.Table) {
	var b strings.Builder
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		if row != t.FirstChild() {
			b.WriteByte('\n')
		}
		for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
			if cell != row.FirstChild() {
				b.WriteString(" | ")
			}
			b.WriteString(w.plainText(cell))
		}
		if _, header := row.(*east.TableHeader); header {
			b.WriteString("\n---")
		}
	}
	if w.inLink {
		w.text(b.String(), false)
		return
	}
	w.tag("<pre>")
	w.text(b.String(), true)
	w.tag("</pre>")
}

// plainText is the visible text of inline content, without markup.
func (w *writer) plainText(n ast.Node) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.WriteString(w.textValue(c))
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		case *ast.AutoLink:
			b.Write(c.Label(w.src))
		case *ast.RawHTML:
			b.WriteString(w.segments(c.Segments))
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

func (w *writer) textValue(t *ast.Text) string {
	v := t.Segment.Value(w.src)
	if t.IsRaw() {
		return string(v)
	}
	return string(util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v))))
}

func (w *writer) segments(s *text.Segments) string {
	var b bytes.Buffer
	for i := 0; i < s.Len(); i++ {
		seg := s.At(i)
		b.Write(seg.Value(w.src))
	}
	return b.String()
}

func (w *writer) inlines(n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		w.inline(c)
	}
}

func (w *writer) inline(n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		w.text(w.textValue(n), false)
		if n.SoftLineBreak() || n.HardLineBreak() {
			w.text("\n"+w.indent, true)
		}
	case *ast.String:
		w.text(string(n.Value), n.IsCode())
	case *ast.CodeSpan:
		body := w.plainText(n)
		if w.inLink {
			w.text(body, false)
			return
		}
		w.tag("<code>")
		w.text(body, true)
		w.tag("</code>")
	case *ast.Emphasis:
		t := "i"
		if n.Level >= 2 {
			t = "b"
		}
		w.wrap(t, n)
	case *east.Strikethrough:
		w.wrap("s", n)
	case *ast.Link:
		w.link(string(n.Destination), n)
	case *ast.AutoLink:
		url := string(n.URL(w.src))
		if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(url), "mailto:") {
			url = "mailto:" + url
		}
		if !linkable(url) || w.inLink {
			w.text(string(n.Label(w.src)), false)
			return
		}
		w.tag(`<a href="` + escapeAttr(url) + `">`)
		w.text(string(n.Label(w.src)), true)
		w.tag("</a>")
	case *ast.Image:
		w.link(string(n.Destination), n)
	case *east.TaskCheckBox:
		if n.IsChecked {
			w.text("☑ ", true)
		} else {
			w.text("☐ ", true)
		}
	case *ast.RawHTML:
		w.text(w.segments(n.Segments), false)
	default:
		w.inlines(n)
	}
}

func (w *writer) wrap(tag string, n ast.Node) {
	w.tag("<" + tag + ">")
	w.inlines(n)
	w.tag("</" + tag + ">")
}

// link renders a link to dest around n's children; a destination Telegram
// would not open (a relative path, javascript:) leaves the text alone.
func (w *writer) link(dest string, n ast.Node) {
	if !linkable(dest) || w.inLink {
		w.inlines(n)
		return
	}
	w.inLink = true
	w.tag(`<a href="` + escapeAttr(dest) + `">`)
	before := w.plain.Len()
	w.inlines(n)
	if w.plain.Len() == before {
		w.text(dest, true)
	}
	w.tag("</a>")
	w.inLink = false
}

// linkable reports whether u is a link Telegram opens, other than a link
// to a user: Telegram makes "tg://user?id=" an inline mention, which
// notifies the user, and an answer never pings anyone.
func linkable(u string) bool {
	l := strings.ToLower(strings.TrimSpace(u))
	if strings.HasPrefix(l, "tg://user") {
		return false
	}
	for _, p := range []string{"https://", "http://", "tg://", "mailto:"} {
		if strings.HasPrefix(l, p) && len(l) > len(p) {
			return !strings.ContainsAny(u, " \n\t")
		}
	}
	return false
}

var attrEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

func escapeAttr(s string) string { return attrEscaper.Replace(s) }

// measure is core.Measurer's count: the UTF-16 length of md once rendered.
func measure(md string) int { return render(md).length() }

// chunks renders md as messages of at most max UTF-16 units each. The
// reply streamer splits long answers itself (with core.Split on Markdown
// boundaries, using measure); this is the guard for what still does not
// fit: a piece is cut at the longest rune prefix that renders within max.
// Whitespace-only pieces are dropped; the result is never empty.
func chunks(md string, max int) []rendered {
	if r := render(md); r.length() <= max {
		return []rendered{r}
	}
	var out []rendered
	for _, piece := range core.Split(md, max, measure) {
		out = append(out, fit(piece, max)...)
	}
	if len(out) == 0 {
		out = []rendered{render("")}
	}
	return out
}

func fit(piece string, max int) []rendered {
	var out []rendered
	runes := []rune(piece)
	for len(runes) > 0 {
		r := render(string(runes))
		k := len(runes)
		if r.length() > max {
			// The longest prefix that fits; one rune always does.
			lo, hi := 1, len(runes)-1
			k = 1
			for lo <= hi {
				mid := (lo + hi) / 2
				if render(string(runes[:mid])).length() <= max {
					k, lo = mid, mid+1
				} else {
					hi = mid - 1
				}
			}
			r = render(string(runes[:k]))
		}
		if strings.TrimSpace(string(runes[:k])) != "" {
			out = append(out, r)
		}
		runes = runes[k:]
	}
	return out
}
