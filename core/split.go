package core

import (
	"strings"
	"unicode/utf8"
)

// Split cuts markdown into messages of at most max units each (runes, or
// what measure counts when it is not nil). It prefers to cut between
// paragraphs, then between lines, then at a space; when it cuts, no piece
// leaves a code fence open: a fence cut in two is closed at the end of one
// message and reopened, with its info string (only the language when the
// line is long), at the start of the next, and a fence the text leaves open
// is closed at the end of the last. Joining the pieces (minus those added
// fence lines) gives back the text. A fence whose marker is max/4 backticks
// or more (absurd in practice) is cut like text.
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
		head := ""
		if reopen != "" {
			head = reopen + "\n"
		}
		room := max - utf8.RuneCountInString(head)
		if rest := closeFence(s, repairable(openFence(reopen, s), max)); utf8.RuneCountInString(rest) <= room {
			out = append(out, head+rest)
			break
		}
		// Cut, then cut shorter while the fence that must be closed at
		// the cut does not fit.
		var cut int
		var text, open string
		for want := room; ; {
			cut = cutPoint(s, want)
			piece := strings.TrimRight(s[:cut], "\n")
			open = repairable(openFence(reopen, piece), max)
			text = head + closeFence(piece, open)
			over := utf8.RuneCountInString(text) - max
			if over <= 0 || want <= 1 {
				break
			}
			want -= over
		}
		if strings.TrimSpace(text) != "" {
			out = append(out, text)
		}
		s = strings.TrimLeft(s[cut:], "\n")
		reopen = reopenLine(open, max)
	}
	return out
}

// repairable returns open, the fence line left open at a cut, unless its
// marker is too long to close and reopen within max (absurd fences of
// max/4 or more backticks are cut like text).
func repairable(open string, max int) string {
	if open == "" || utf8.RuneCountInString(fenceMarker(open))+1 > max/4 {
		return ""
	}
	return open
}

// reopenLine is the line that reopens fence open in the next piece: the
// opening line itself, or when that is long (more than max/4 runes) its
// marker and language only, or the marker alone. So a long info string is
// not repeated in every piece, leaving room for little else.
func reopenLine(open string, max int) string {
	if utf8.RuneCountInString(open) <= max/4 {
		return open
	}
	marker := fenceMarker(open)
	if lang := strings.Fields(open[len(marker):]); len(lang) > 0 && utf8.RuneCountInString(marker+lang[0]) <= max/4 {
		return marker + lang[0]
	}
	return marker
}

// closeFence appends the closing line of fence open to piece ("" leaves it
// as it is).
func closeFence(piece, open string) string {
	if open == "" {
		return piece
	}
	return strings.TrimRight(piece, "\n") + "\n" + fenceMarker(open)
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
