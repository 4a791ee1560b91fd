package engine

import (
	"strings"
	"testing"
)

func TestTail(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{"empty", nil, ""},
		{"lines across writes", []string{"one\ntw", "o\nthree\n"}, "one\ntwo\nthree"},
		{"last lines only", []string{"1\n2\n3\n4\n5\n"}, "3\n4\n5"},
		{"byte limit", []string{strings.Repeat("x", 30) + "\nend\n"}, "xxxxxxxxxxx\nend"},
		{"one huge write", []string{"a\n", strings.Repeat("y", 100)}, strings.Repeat("y", 16)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl := newTail(3, 16)
			for _, w := range tc.writes {
				if n, err := tl.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := tl.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}
