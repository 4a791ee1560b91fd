package core

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplitKeepsShortText(t *testing.T) {
	got := Split("hello **world**", 100, nil)
	if len(got) != 1 || got[0] != "hello **world**" {
		t.Fatalf("Split = %q", got)
	}
}

func TestSplitPrefersParagraphs(t *testing.T) {
	para := strings.Repeat("word ", 15) // 75 runes
	text := para + "\n\n" + para + "\n\n" + para
	got := Split(text, 170, nil)
	if len(got) != 2 {
		t.Fatalf("want 2 pieces, got %d: %q", len(got), got)
	}
	if !strings.HasSuffix(got[0], para) || got[1] != para {
		t.Fatalf("cut not at a paragraph: %q", got)
	}
}

func TestSplitClosesAndReopensFences(t *testing.T) {
	var b strings.Builder
	b.WriteString("Here is the code:\n\n```go\n")
	for i := range 60 {
		b.WriteString("fmt.Println(\"line ")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString("\")\n")
	}
	b.WriteString("```\n\nDone.")
	pieces := Split(b.String(), 300, nil)
	if len(pieces) < 3 {
		t.Fatalf("want several pieces, got %d", len(pieces))
	}
	for i, p := range pieces {
		if n := utf8.RuneCountInString(p); n > 300 {
			t.Errorf("piece %d has %d runes", i, n)
		}
		if strings.Count(p, "```")%2 != 0 {
			t.Errorf("piece %d leaves a fence open:\n%s", i, p)
		}
		if i > 0 && i < len(pieces)-1 && !strings.HasPrefix(p, "```go\n") {
			t.Errorf("piece %d does not reopen the go fence:\n%s", i, p)
		}
	}
	if !strings.HasSuffix(pieces[len(pieces)-1], "Done.") {
		t.Errorf("last piece lost the tail: %q", pieces[len(pieces)-1])
	}
	// Removing the added fence lines gives back the text.
	if got := rejoin(pieces); got != normalize(b.String()) {
		t.Errorf("rejoined text differs:\n%s\n---\n%s", got, normalize(b.String()))
	}
}

func TestSplitUsesMeasure(t *testing.T) {
	// A measure that counts '&' as five units, like an escaped entity.
	measure := func(s string) int { return utf8.RuneCountInString(s) + 4*strings.Count(s, "&") }
	text := strings.Repeat("a & b ", 200)
	for i, p := range Split(text, 200, measure) {
		if m := measure(p); m > 200 {
			t.Errorf("piece %d measures %d", i, m)
		}
	}
}

func TestSplitLongLineWithoutSpaces(t *testing.T) {
	text := strings.Repeat("é", 1000)
	pieces := Split(text, 100, nil)
	if strings.Join(pieces, "") != text {
		t.Fatal("runes lost or broken")
	}
	for _, p := range pieces {
		if !utf8.ValidString(p) || utf8.RuneCountInString(p) > 100 {
			t.Fatalf("bad piece %q", p)
		}
	}
}

// rejoin undoes Split's fence repair: drops a closing fence line at the end
// of a piece and the reopened fence line at the start of the next.
func rejoin(pieces []string) string {
	var out []string
	for i, p := range pieces {
		lines := strings.Split(p, "\n")
		if i > 0 && openFence("", pieces[i-1]) == "" && strings.HasPrefix(p, "```") && fenceWasCut(pieces[i-1]) {
			lines = lines[1:]
		}
		if i < len(pieces)-1 && fenceWasCut(p) {
			lines = lines[:len(lines)-1]
		}
		out = append(out, strings.Join(lines, "\n"))
	}
	return normalize(strings.Join(out, "\n"))
}

// fenceWasCut reports whether piece ends with a fence Split added: the
// text before its last line leaves a fence open.
func fenceWasCut(piece string) bool {
	i := strings.LastIndexByte(piece, '\n')
	return i >= 0 && openFence("", piece[:i]) != "" && fenceMarker(piece[i+1:]) != ""
}

func normalize(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' }), "\n")
}

func FuzzSplit(f *testing.F) {
	f.Add("hello\n\n```go\ncode\n```\n", 50)
	f.Add(strings.Repeat("x", 500), 45)
	f.Add("~~~\n"+strings.Repeat("line\n", 40)+"~~~", 60)
	f.Add("~~~"+strings.Repeat("0", 64), 66) // an open fence whose line is longer than a piece
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 40 || max > 5000 || !utf8.ValidString(s) {
			return
		}
		pieces := Split(s, max, nil)
		for i, p := range pieces {
			if n := utf8.RuneCountInString(p); n > max {
				t.Fatalf("piece %d has %d runes > %d", i, n, max)
			}
			if !utf8.ValidString(p) {
				t.Fatalf("piece %d is not valid UTF-8", i)
			}
			if len(pieces) > 1 && openFence("", p) != "" && !hugeFence(s, max) {
				t.Fatalf("piece %d leaves a fence open: %q", i, p)
			}
		}
		if !keepsText(s, pieces) {
			t.Fatalf("text lost: %q became %q", s, pieces)
		}
	})
}

// hugeFence reports whether s has a fence marker too long for Split to
// close and reopen within max (max/4 backticks or more).
func hugeFence(s string, max int) bool {
	for line := range strings.SplitSeq(s, "\n") {
		if m := fenceMarker(strings.TrimLeft(line, " ")); m != "" && repairable(m, max) == "" {
			return true
		}
	}
	return false
}

// keepsText reports whether every rune of s other than white space is in
// pieces, in order (Split adds fence lines and drops only white space).
func keepsText(s string, pieces []string) bool {
	got := []rune(strings.Join(strings.Fields(strings.Join(pieces, "\n")), ""))
	for _, r := range strings.Join(strings.Fields(s), "") {
		for len(got) > 0 && got[0] != r {
			got = got[1:]
		}
		if len(got) == 0 {
			return false
		}
		got = got[1:]
	}
	return true
}

func TestSplitLongFenceLinesStayWithinTheLimit(t *testing.T) {
	for _, text := range []string{
		// An info string too long to repeat in every piece.
		"```go " + strings.Repeat("i", 300) + "\n" + strings.Repeat("fmt.Println(x)\n", 60) + "```",
		// A marker longer than the 4 runes reserved for closing.
		strings.Repeat("`", 12) + "\n" + strings.Repeat("x", 400) + "\n" + strings.Repeat("`", 12),
		// A fence the text leaves open.
		"~~~" + strings.Repeat("0", 64),
	} {
		for _, max := range []int{66, 100, 200} {
			pieces := Split(text, max, nil)
			if len(pieces) > 2*utf8.RuneCountInString(text)/max+2 {
				t.Errorf("max %d: %d pieces for %d runes", max, len(pieces), utf8.RuneCountInString(text))
			}
			for i, p := range pieces {
				if n := utf8.RuneCountInString(p); n > max {
					t.Errorf("max %d: piece %d has %d runes", max, i, n)
				}
				if len(pieces) > 1 && openFence("", p) != "" {
					t.Errorf("max %d: piece %d leaves a fence open: %q", max, i, p)
				}
			}
			if !keepsText(text, pieces) {
				t.Errorf("max %d: text lost: %q", max, pieces)
			}
		}
	}
}
