package discord

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// MaxLen is Discord's limit for a message's content, in characters (code
// points) of the rendered text.
const MaxLen = 2000

var md = goldmark.New(goldmark.WithExtensions(extension.Table))

// Render turns the agent's Markdown into Discord's dialect. Discord's
// Markdown is close to CommonMark, so the text is kept as written except
// where Discord would show it wrong: headings deeper than ###, which
// Discord does not render, become bold lines; setext headings become # and
// ## headings; tables become aligned plain text in a code block. Outside
// code, @everyone and @here get a zero-width space after the @ so they
// neither ping nor highlight (messages are also sent with allowed_mentions
// parsing nothing). Only top-level headings and tables are rewritten;
// the source between them is copied byte for byte.
func Render(markdown string) string {
	if !strings.ContainsAny(markdown, "#|@=-") {
		return markdown
	}
	src := []byte(markdown)
	doc := md.Parser().Parse(text.NewReader(src))

	protected := make([]bool, len(src))
	type edit struct {
		start, end int
		text       string
	}
	var edits []edit
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.CodeSpan:
			for c := n.FirstChild(); c != nil; c = c.NextSibling() {
				if t, ok := c.(*ast.Text); ok {
					markRange(protected, t.Segment.Start, t.Segment.Stop)
				}
			}
		case *ast.FencedCodeBlock, *ast.CodeBlock, *ast.HTMLBlock:
			for i := 0; i < n.Lines().Len(); i++ {
				seg := n.Lines().At(i)
				markRange(protected, seg.Start, seg.Stop)
			}
		case *ast.RawHTML:
			for i := 0; i < n.Segments.Len(); i++ {
				seg := n.Segments.At(i)
				markRange(protected, seg.Start, seg.Stop)
			}
		}
		return ast.WalkContinue, nil
	})
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		switch n := n.(type) {
		case *ast.Heading:
			if start, end, repl, ok := heading(n, src); ok {
				edits = append(edits, edit{start, end, repl})
			}
		case *east.Table:
			if start, end, repl, ok := table(n, src); ok {
				edits = append(edits, edit{start, end, repl})
			}
		}
	}

	var out strings.Builder
	out.Grow(len(src) + 16)
	at := 0
	for _, e := range edits {
		if e.start < at { // overlapping edits cannot happen for siblings; be safe
			continue
		}
		escapeMentions(&out, src, at, e.start, protected)
		out.WriteString(e.text)
		at = e.end
	}
	escapeMentions(&out, src, at, len(src), protected)
	return out.String()
}

// Measure is the length of markdown once rendered, in the unit of MaxLen.
func Measure(markdown string) int { return utf8.RuneCountInString(Render(markdown)) }

func markRange(mask []bool, start, stop int) {
	for i := max(start, 0); i < stop && i < len(mask); i++ {
		mask[i] = true
	}
}

var massMentions = [][]byte{[]byte("@everyone"), []byte("@here")}

// escapeMentions copies src[from:to] to out, breaking @everyone and @here
// outside protected bytes with a zero-width space after the @.
func escapeMentions(out *strings.Builder, src []byte, from, to int, protected []bool) {
	for i := from; i < to; {
		j := bytes.IndexByte(src[i:to], '@')
		if j < 0 {
			out.Write(src[i:to])
			return
		}
		out.Write(src[i : i+j])
		i += j
		out.WriteByte('@')
		if !protected[i] {
			for _, m := range massMentions {
				if bytes.HasPrefix(src[i:], m) {
					out.WriteString("\u200b")
					break
				}
			}
		}
		i++
	}
}

// lineStart and lineEnd find the bounds of the line holding pos.
func lineStart(src []byte, pos int) int {
	pos = min(max(pos, 0), len(src))
	return bytes.LastIndexByte(src[:pos], '\n') + 1
}

func lineEnd(src []byte, pos int) int {
	pos = min(max(pos, 0), len(src))
	if i := bytes.IndexByte(src[pos:], '\n'); i >= 0 {
		return pos + i
	}
	return len(src)
}

// heading rewrites a heading Discord cannot show: levels 4 to 6 and
// setext headings. It returns the byte range replaced.
func heading(h *ast.Heading, src []byte) (start, end int, repl string, ok bool) {
	lines := h.Lines()
	if lines.Len() == 0 {
		return 0, 0, "", false
	}
	first, last := lines.At(0), lines.At(lines.Len()-1)
	start = lineStart(src, first.Start)
	atx := bytes.HasPrefix(bytes.TrimLeft(src[start:first.Start], " "), []byte("#"))
	if atx && h.Level <= 3 {
		return 0, 0, "", false
	}
	end = lineEnd(src, last.Stop)
	if !atx { // the underline is the next line
		if end < len(src) {
			end = lineEnd(src, end+1)
		}
	}
	var content []string
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		content = append(content, strings.TrimSpace(string(seg.Value(src))))
	}
	body := strings.Join(content, " ")
	var b strings.Builder
	if h.Level <= 3 {
		b.WriteString(strings.Repeat("#", h.Level) + " ")
		escapeMentions(&b, []byte(body), 0, len(body), make([]bool, len(body)))
	} else {
		b.WriteString("**")
		escapeMentions(&b, []byte(body), 0, len(body), make([]bool, len(body)))
		b.WriteString("**")
	}
	return start, end, b.String(), true
}

// table renders a table as aligned plain text in a code block, which
// Discord shows in a monospace font.
func table(t *east.Table, src []byte) (start, end int, repl string, ok bool) {
	var rows [][]string
	var widths []int
	var startPos, lastPos = -1, -1
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		if startPos < 0 {
			startPos = r.Pos()
		}
		lastPos = r.Pos()
		var row []string
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			cell := plainText(c, src)
			if len(widths) <= len(row) {
				widths = append(widths, 0)
			}
			widths[len(row)] = max(widths[len(row)], utf8.RuneCountInString(cell))
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	if startPos < 0 {
		return 0, 0, "", false
	}
	var body strings.Builder
	for i, row := range rows {
		line := make([]string, len(row))
		for j, cell := range row {
			line[j] = cell + strings.Repeat(" ", widths[j]-utf8.RuneCountInString(cell))
		}
		body.WriteString(strings.TrimRight(strings.Join(line, " | "), " "))
		body.WriteByte('\n')
		if i == 0 {
			dashes := make([]string, len(widths))
			for j, w := range widths {
				dashes[j] = strings.Repeat("-", max(w, 1))
			}
			body.WriteString(strings.Join(dashes, "-+-"))
			body.WriteByte('\n')
		}
	}
	fence := strings.Repeat("`", max(3, longestRun(body.String(), '`')+1))
	return lineStart(src, startPos), lineEnd(src, lastPos), fence + "\n" + body.String() + fence, true
}

// plainText is the text of an inline tree without markup; a link keeps its
// destination in parentheses.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		switch c := c.(type) {
		case *ast.Text:
			if entering {
				b.Write(c.Segment.Value(src))
				if c.SoftLineBreak() || c.HardLineBreak() {
					b.WriteByte(' ')
				}
			}
		case *ast.String:
			if entering {
				b.Write(c.Value)
			}
		case *ast.AutoLink:
			if entering {
				b.Write(c.URL(src))
			}
			return ast.WalkSkipChildren, nil
		case *ast.Link:
			if !entering {
				b.WriteString(" (" + string(c.Destination) + ")")
			}
		}
		return ast.WalkContinue, nil
	})
	return strings.ReplaceAll(b.String(), "\n", " ")
}

func longestRun(s string, r byte) int {
	best, cur := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == r {
			cur++
			best = max(best, cur)
		} else {
			cur = 0
		}
	}
	return best
}
