package telegramtest

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
)

// allowedTags are the tags Telegram's HTML parse mode accepts.
var allowedTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true,
	"s": true, "strike": true, "del": true, "a": true, "code": true, "pre": true,
	"blockquote": true, "tg-spoiler": true, "span": true, "tg-emoji": true,
}

// styleTags may contain and be contained in any entity except code and pre.
var styleTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true,
	"s": true, "strike": true, "del": true, "tg-spoiler": true, "span": true,
}

// ParseHTML parses text the way Telegram's HTML parse mode does and returns
// the text a user sees (tags removed, entities decoded). It is stricter
// than Telegram where Telegram is lenient (a bare '<', '>' or '&' is an
// error here), so that a renderer passing it passes Telegram. The error
// text is Telegram's, "can't parse entities: ...".
func ParseHTML(s string) (string, error) {
	var out strings.Builder
	var stack []openTag
	inside := func(name string) bool {
		for _, o := range stack {
			if o.name == name {
				return true
			}
		}
		return false
	}
	fail := func(pos int, format string, args ...any) (string, error) {
		return "", fmt.Errorf("can't parse entities: %s at byte offset %d", fmt.Sprintf(format, args...), pos)
	}
	for i := 0; i < len(s); {
		switch c := s[i]; c {
		case '&':
			end := strings.IndexByte(s[i:], ';')
			if end < 0 {
				return fail(i, "unclosed entity")
			}
			name := s[i+1 : i+end]
			switch {
			case name == "lt":
				out.WriteByte('<')
			case name == "gt":
				out.WriteByte('>')
			case name == "amp":
				out.WriteByte('&')
			case name == "quot":
				out.WriteByte('"')
			case strings.HasPrefix(name, "#x") || strings.HasPrefix(name, "#X"):
				n, err := strconv.ParseUint(name[2:], 16, 32)
				if err != nil || n == 0 || n > 0x10FFFF {
					return fail(i, "bad numeric entity %q", name)
				}
				out.WriteRune(rune(n))
			case strings.HasPrefix(name, "#"):
				n, err := strconv.ParseUint(name[1:], 10, 32)
				if err != nil || n == 0 || n > 0x10FFFF {
					return fail(i, "bad numeric entity %q", name)
				}
				out.WriteRune(rune(n))
			default:
				return fail(i, "unsupported HTML entity %q", name)
			}
			i += end + 1
		case '>':
			return fail(i, "unexpected '>'")
		case '<':
			end := strings.IndexByte(s[i:], '>')
			if end < 0 {
				return fail(i, "unclosed tag")
			}
			tag := s[i+1 : i+end]
			if strings.HasPrefix(tag, "/") {
				name := strings.ToLower(strings.TrimSpace(tag[1:]))
				if len(stack) == 0 || stack[len(stack)-1].name != name {
					return fail(i, "unmatched end tag \"%s\"", name)
				}
				stack = stack[:len(stack)-1]
				i += end + 1
				continue
			}
			name, attrs, err := parseTag(tag)
			if err != nil {
				return fail(i, "%v", err)
			}
			if !allowedTags[name] {
				return fail(i, "unsupported start tag \"%s\"", name)
			}
			if err := checkTag(name, attrs, tagNames(stack), inside); err != nil {
				return fail(i, "%v", err)
			}
			stack = append(stack, openTag{name, i})
			i += end + 1
		default:
			out.WriteByte(c)
			i++
		}
	}
	if len(stack) > 0 {
		o := stack[len(stack)-1]
		return fail(o.pos, "can't find end tag corresponding to start tag \"%s\"", o.name)
	}
	return out.String(), nil
}

type openTag struct {
	name string
	pos  int
}

func tagNames(st []openTag) []string {
	names := make([]string, len(st))
	for i, o := range st {
		names[i] = o.name
	}
	return names
}

// checkTag applies Telegram's nesting rules: code and pre contain nothing
// but a code directly inside pre; a link contains only style tags;
// blockquotes do not nest.
func checkTag(name string, attrs map[string]string, stack []string, inside func(string) bool) error {
	parent := ""
	if len(stack) > 0 {
		parent = stack[len(stack)-1]
	}
	switch {
	case parent == "pre" && name == "code":
		// <pre><code class="language-x"> sets the language.
	case inside("code") || inside("pre"):
		return fmt.Errorf("tag \"%s\" inside code or pre", name)
	case inside("a") && !styleTags[name]:
		return fmt.Errorf("tag \"%s\" inside a link", name)
	case name == "blockquote" && inside("blockquote"):
		return fmt.Errorf("nested blockquote")
	}
	switch name {
	case "a":
		if attrs["href"] == "" {
			return fmt.Errorf("link without href")
		}
	case "span":
		if attrs["class"] != "tg-spoiler" {
			return fmt.Errorf("span without class tg-spoiler")
		}
	case "code":
		if c, ok := attrs["class"]; ok && (parent != "pre" || !strings.HasPrefix(c, "language-")) {
			return fmt.Errorf("bad code class %q", c)
		}
	}
	return nil
}

// parseTag splits `name a="v" b` into its name and attributes; attribute
// values must be quoted and may hold entities (decoded loosely).
func parseTag(tag string) (string, map[string]string, error) {
	tag = strings.TrimSpace(tag)
	n := strings.IndexAny(tag, " \t\n")
	if n < 0 {
		return strings.ToLower(tag), nil, nil
	}
	name, rest := strings.ToLower(tag[:n]), strings.TrimSpace(tag[n:])
	attrs := map[string]string{}
	for rest != "" {
		eq := strings.IndexAny(rest, "= ")
		if eq < 0 || rest[eq] == ' ' {
			key := rest
			if eq >= 0 {
				key = rest[:eq]
				rest = strings.TrimSpace(rest[eq:])
			} else {
				rest = ""
			}
			attrs[strings.ToLower(key)] = ""
			continue
		}
		key := strings.ToLower(rest[:eq])
		rest = rest[eq+1:]
		if rest == "" || (rest[0] != '"' && rest[0] != '\'') {
			return "", nil, fmt.Errorf("unquoted attribute value in \"%s\"", name)
		}
		q := rest[0]
		end := strings.IndexByte(rest[1:], q)
		if end < 0 {
			return "", nil, fmt.Errorf("unclosed attribute value in \"%s\"", name)
		}
		val := rest[1 : 1+end]
		if strings.ContainsAny(val, "<>") {
			return "", nil, fmt.Errorf("bad attribute value in \"%s\"", name)
		}
		attrs[key] = val
		rest = strings.TrimSpace(rest[end+2:])
	}
	return name, attrs, nil
}

// UTF16Len is the length of s in UTF-16 code units, the unit of Telegram's
// length limits and entity offsets.
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
