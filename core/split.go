package core

import (
	"strings"
	"unicode/utf8"
)

// Split cuts markdown into messages of at most max units each (runes, or
// what measure counts when it is not nil). It prefers to cut between
// paragraphs, then between lines, then at a space; it never leaves a code
// fence open: a fence cut in two is closed at the end of one message and
// reopened, with its info string, at the start of the next. Joining the
// pieces (minus those added fence lines) gives back the text.
func Split(markdown string, max int, measure func(string) int) []string {
	if max < 40 {
		max = 40 // room for a fence line and some text
	}
	if measure == nil {
		measure = utf8.RuneCountInString
	}
	if utf8.RuneCountInString(markdown) <= max && measure(markdown) <= max {
		return []string{markdown}
	}
	// Split by runes first, then tighten any piece the measure says is
	// too long (rendering can make text longer: entities, markup).
	var out []string
	for _, p := range splitRunes(markdown, max) {
		out = append(out, tighten(p, max, measure)...)
	}
	return out
}

func tighten(piece string, max int, measure func(string) int) []string {
	m := measure(piece)
	if m <= max {
		return []string{piece}
	}
	n := utf8.RuneCountInString(piece)
	limit := n * max / m * 9 / 10
	if limit >= n {
		limit = n - 1
	}
	if limit < 40 {
		return []string{piece} // cannot do better; the adapter must cope
	}
	var out []string
	for _, p := range splitRunes(piece, limit) {
		out = append(out, tighten(p, max, measure)...)
	}
	return out
}

// splitRunes is Split with rune counting.
func splitRunes(s string, max int) []string {
	var out []string
	reopen := "" // the fence line to reopen the next piece with
	for s != "" {
		budget := max - utf8.RuneCountInString(reopen)
		if reopen != "" {
			budget-- // the newline after the reopened fence line
		}
		if utf8.RuneCountInString(s) <= budget {
			out = append(out, joinReopen(reopen, s))
			break
		}
		// Reserve room for closing a fence we might cut inside of.
		cut := cutPoint(s, budget-4)
		piece := s[:cut]
		open := openFence(reopen, piece)
		text := joinReopen(reopen, strings.TrimRight(piece, "\n"))
		if open != "" {
			text += "\n" + fenceCloser(open)
		}
		if strings.TrimSpace(text) != "" {
			out = append(out, text)
		}
		s = strings.TrimLeft(s[cut:], "\n")
		reopen = open
	}
	return out
}

func joinReopen(reopen, s string) string {
	if reopen == "" {
		return s
	}
	return reopen + "\n" + s
}

// cutPoint returns a byte index ≤ the index of rune number max in s where
// s should be cut: after a blank line, else after a newline, else after a
// space, in the latter half of the window; else at the rune boundary.
func cutPoint(s string, max int) int {
	if max < 1 {
		max = 1
	}
	end := 0
	for i := range s {
		if max == 0 {
			break
		}
		max--
		end = i
	}
	_, size := utf8.DecodeRuneInString(s[end:])
	end += size
	window := s[:end]
	half := len(window) / 2
	if i := strings.LastIndex(window, "\n\n"); i >= half {
		return i + 2
	}
	if i := strings.LastIndexByte(window, '\n'); i >= half {
		return i + 1
	}
	if i := strings.LastIndexByte(window, ' '); i >= half {
		return i + 1
	}
	return end
}

// openFence reports the fence line left open at the end of piece, given the
// fence that was open at its start ("" when none).
func openFence(open, piece string) string {
	for line := range strings.SplitSeq(piece, "\n") {
		t := strings.TrimLeft(line, " ")
		if len(line)-len(t) > 3 {
			continue // indented code, not a fence
		}
		marker := fenceMarker(t)
		if marker == "" {
			continue
		}
		if open == "" {
			open = strings.TrimRight(t, " \t\r")
		} else if strings.HasPrefix(marker, fenceMarker(open)[:3]) && len(marker) >= len(fenceMarker(open)) &&
			strings.TrimSpace(t[len(marker):]) == "" {
			open = ""
		}
	}
	return open
}

// fenceMarker returns the run of ``` or ~~~ (3 or more) that starts line, or "".
func fenceMarker(line string) string {
	if len(line) < 3 || (line[0] != '`' && line[0] != '~') {
		return ""
	}
	c := line[0]
	n := 0
	for n < len(line) && line[n] == c {
		n++
	}
	if n < 3 {
		return ""
	}
	if c == '`' && strings.Contains(line[n:], "`") {
		return "" // a backtick fence's info string cannot hold a backtick
	}
	return line[:n]
}

func fenceCloser(open string) string { return fenceMarker(open) }
