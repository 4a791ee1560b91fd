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

func TestScenarios(t *testing.T) {
	type req struct{ scenario, path string }
	var s Scenarios[req, string]
	s.Set("b", func(*req) string { return "bee" })
	s.Set("a", func(*req) string { return "ay" })
	respond, ok := s.Take(&req{"a", "/v1/x"}, "a")
	if !ok || respond(nil) != "ay" {
		t.Errorf("scenario a: %v", ok)
	}
	if _, ok := s.Take(&req{"zz", "/v1/x"}, "zz"); ok {
		t.Error("an unknown scenario has a responder")
	}
	s.Miss("GET /nope")
	if got := s.Requests(func(r *req) bool { return r.scenario == "a" }); len(got) != 1 || got[0].path != "/v1/x" {
		t.Errorf("requests of a: %+v", got)
	}
	if got := s.Requests(func(*req) bool { return true }); len(got) != 2 {
		t.Errorf("%d requests recorded, want 2 (unknown scenarios too)", len(got))
	}
	if got := s.Names(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("names %v", got)
	}
	if got := s.Unexpected(); len(got) != 1 || got[0] != "GET /nope" {
		t.Errorf("unexpected %v", got)
	}
}
