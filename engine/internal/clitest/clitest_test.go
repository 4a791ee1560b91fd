package clitest

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestChunks(t *testing.T) {
	for _, s := range []string{"", "short", "Hello from the fake model. This answer streams in several pieces.", strings.Repeat("é✓", 40)} {
		pieces := Chunks(s)
		if strings.Join(pieces, "") != s {
			t.Errorf("%q: pieces %q do not join to it", s, pieces)
		}
		for _, p := range pieces {
			if p == "" || !utf8.ValidString(p) {
				t.Errorf("%q: piece %q is empty or cuts a rune", s, p)
			}
		}
		if len(s) > 24 && len(pieces) < 2 {
			t.Errorf("%q comes in %d piece, want several", s, len(pieces))
		}
	}
}
