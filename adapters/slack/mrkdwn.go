package slack

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// markdown parses the agent's CommonMark with the GitHub extensions agents
// use (strikethrough, tables, bare links, task lists).
var markdown = goldmark.New(goldmark.WithExtensions(
	extension.Strikethrough, extension.Table, extension.Linkify, extension.TaskList))

// Mrkdwn renders the agent's Markdown as Slack mrkdwn by walking the parsed
// tree: **bold** becomes *bold*, _italic_ _italic_, ~~strike~~ ~strike~,
// headings bold lines, links <url|text>, lists "•" or "1." lines, code
// spans and fences stay code, block quotes "> " lines, tables a
// preformatted block. Every &, < and > of the text is escaped, so nothing
// the agent writes (<!channel>, <!here>, <@U123>, <#C1>) becomes a
// mention or a link Slack would resolve, and the bare words @channel,
// @here and @everyone get an invisible word joiner after the @, so nothing
// pings. It is safe for any input.
func Mrkdwn(md string) string {
	src := []byte(md)
	doc := markdown.Parser().Parse(text.NewReader(src))
	r := &renderer{src: src}
	return strings.TrimRight(r.blocks(doc), "\n ")
}

type renderer struct {
	src    []byte
	inBold bool // inside a bold span or heading: no nested '*'
}

// blocks renders the block children of n, separated by blank lines.
func (r *renderer) blocks(n ast.Node) string {
	var parts []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if s := r.block(c); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n\n")
}

func (r *renderer) block(n ast.Node) string {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return r.inlines(n)
	case *ast.Heading:
		was := r.inBold
		r.inBold = true
		s := r.inlines(n)
		r.inBold = was
		if strings.TrimSpace(s) == "" {
			return ""
		}
		return "*" + s + "*"
	case *ast.ThematicBreak:
		return "──────────"
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		code := strings.ReplaceAll(r.lines(n), "```", "`\u200b``")
		if code != "" && !strings.HasSuffix(code, "\n") {
			code += "\n"
		}
		return "```\n" + escape(code) + "```"
	case *ast.HTMLBlock:
		s := r.lines(n)
		if n.HasClosure() {
			s += string(n.ClosureLine.Value(r.src))
		}
		return escape(strings.TrimRight(s, "\n"))
	case *ast.Blockquote:
		inner := r.blocks(n)
		lines := strings.Split(inner, "\n")
		for i, l := range lines {
			lines[i] = strings.TrimRight("> "+l, " ")
		}
		return strings.Join(lines, "\n")
	case *ast.List:
		return r.list(n)
	case *east.Table:
		return r.table(n)
	default:
		// Unknown blocks (footnotes, definition lists): their content.
		if n.HasChildren() {
			return r.blocks(n)
		}
		return escape(r.lines(n))
	}
}

// lines is the raw text of a block's lines.
func (r *renderer) lines(n ast.Node) string {
	var b strings.Builder
	l := n.Lines()
	for i := range l.Len() {
		seg := l.At(i)
		b.Write(seg.Value(r.src))
	}
	return b.String()
}

// list renders items as "• text" or "N. text", continuation lines and
// nested lists indented under the text.
func (r *renderer) list(l *ast.List) string {
	var out []string
	num := l.Start
	for item := l.FirstChild(); item != nil; item = item.NextSibling() {
		marker := "•"
		if l.IsOrdered() {
			marker = strconv.Itoa(num) + "."
			num++
		}
		var parts []string
		for c := item.FirstChild(); c != nil; c = c.NextSibling() {
			if s := r.block(c); s != "" {
				parts = append(parts, s)
			}
		}
		body := strings.Join(parts, "\n")
		pad := strings.Repeat(" ", 4)
		lines := strings.Split(body, "\n")
		for i := range lines {
			if i == 0 {
				lines[i] = marker + " " + lines[i]
			} else if lines[i] != "" {
				lines[i] = pad + lines[i]
			}
		}
		out = append(out, strings.TrimRight(strings.Join(lines, "\n"), " "))
	}
	return strings.Join(out, "\n")
}

// table renders a GFM table as a preformatted block with aligned columns.
func (r *renderer) table(t *east.Table) string {
	var rows [][]string
	var widths []int
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		var cells []string
		for i, cell := 0, row.FirstChild(); cell != nil; i, cell = i+1, cell.NextSibling() {
			s := strings.ReplaceAll(r.plain(cell), "\n", " ")
			cells = append(cells, s)
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len([]rune(s)))
		}
		rows = append(rows, cells)
	}
	var b strings.Builder
	b.WriteString("```\n")
	for ri, cells := range rows {
		for i, c := range cells {
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(c)
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-len([]rune(c))))
			}
		}
		b.WriteByte('\n')
		if ri == 0 && len(rows) > 1 {
			for i, w := range widths {
				if i > 0 {
					b.WriteString("-+-")
				}
				b.WriteString(strings.Repeat("-", w))
			}
			b.WriteByte('\n')
		}
	}
	return escape(strings.TrimSuffix(b.String(), "\n")) + "\n```"
}

// inlines renders the inline children of n.
func (r *renderer) inlines(n ast.Node) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		r.inline(&b, c)
	}
	return b.String()
}

func (r *renderer) inline(b *strings.Builder, n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		b.WriteString(escape(string(n.Value(r.src))))
		if n.HardLineBreak() || n.SoftLineBreak() {
			b.WriteByte('\n')
		}
	case *ast.String:
		b.WriteString(escape(string(n.Value)))
	case *ast.CodeSpan:
		s := r.plain(n)
		if strings.TrimSpace(s) == "" {
			b.WriteString(escape(s))
			return
		}
		b.WriteString("`" + escape(strings.ReplaceAll(s, "`", "ˋ")) + "`")
	case *ast.Emphasis:
		inner := r.wrapped(n, n.Level >= 2)
		switch {
		case strings.TrimSpace(inner) == "":
			b.WriteString(inner)
		case n.Level >= 2 && !r.inBold:
			b.WriteString("*" + inner + "*")
		case n.Level >= 2:
			b.WriteString(inner)
		default:
			b.WriteString("_" + inner + "_")
		}
	case *east.Strikethrough:
		inner := r.inlines(n)
		if strings.TrimSpace(inner) == "" {
			b.WriteString(inner)
			return
		}
		b.WriteString("~" + inner + "~")
	case *ast.Link:
		b.WriteString(link(string(n.Destination), r.plain(n)))
	case *ast.Image:
		b.WriteString(link(string(n.Destination), r.plain(n)))
	case *ast.AutoLink:
		u := string(n.URL(r.src))
		if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(u), "mailto:") {
			u = "mailto:" + u
		}
		b.WriteString(link(u, string(n.Label(r.src))))
	case *ast.RawHTML:
		for i := range n.Segments.Len() {
			seg := n.Segments.At(i)
			b.WriteString(escape(string(seg.Value(r.src))))
		}
	case *east.TaskCheckBox:
		if n.IsChecked {
			b.WriteString("☑ ")
		} else {
			b.WriteString("☐ ")
		}
	default:
		b.WriteString(r.inlines(n))
	}
}

// wrapped renders an emphasis's children, marking bold while inside one.
func (r *renderer) wrapped(n ast.Node, bold bool) string {
	was := r.inBold
	if bold {
		r.inBold = true
	}
	s := r.inlines(n)
	r.inBold = was
	return s
}

// plain is the text of n's inline descendants without any markup.
func (r *renderer) plain(n ast.Node) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Value(r.src))
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		case *ast.RawHTML:
			for i := range c.Segments.Len() {
				seg := c.Segments.At(i)
				b.Write(seg.Value(r.src))
			}
		}
		return ast.WalkContinue, nil
	})
	return strings.TrimRight(b.String(), " ")
}

// link renders a link as <url|label>, or as escaped text when the URL is
// not http, https or mailto (Slack would otherwise resolve <!...>, <@...>).
func link(dest, label string) string {
	u, err := url.Parse(dest)
	ok := false
	if err == nil {
		switch strings.ToLower(u.Scheme) {
		case "http", "https":
			ok = u.Host != "" && strings.HasPrefix(strings.ToLower(dest), strings.ToLower(u.Scheme)+"://")
		case "mailto":
			ok = u.Opaque != "" && strings.HasPrefix(strings.ToLower(dest), "mailto:")
		}
	}
	label = strings.TrimSpace(label)
	if !ok {
		if label == "" || label == dest {
			return escape(dest)
		}
		return escape(label + " (" + dest + ")")
	}
	safe := urlEscaper.Replace(dest)
	if label == "" || label == dest || "mailto:"+label == dest {
		return "<" + safe + ">"
	}
	return "<" + safe + "|" + escape(strings.ReplaceAll(label, "\n", " ")) + ">"
}

// urlEscaper makes a URL safe inside <...|...>.
var urlEscaper = strings.NewReplacer("&", "&amp;", "<", "%3C", ">", "%3E", "|", "%7C", " ", "%20", "\n", "%0A")

// textEscaper escapes Slack's three control characters.
var textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// escape escapes &, < and > and defuses the bare mass mentions.
func escape(s string) string {
	return defuse(textEscaper.Replace(s))
}

// wordJoiner is invisible and stops Slack from reading "@here" as a word.
const wordJoiner = "\u2060"

var massMentions = []string{"channel", "here", "everyone"}

// defuse puts a word joiner after the @ of @channel, @here and @everyone,
// in any letter case.
func defuse(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '@')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i+1])
		s = s[i+1:]
		for _, w := range massMentions {
			if len(s) >= len(w) && strings.EqualFold(s[:len(w)], w) {
				b.WriteString(wordJoiner)
				break
			}
		}
	}
}
