package store

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestKeyString(t *testing.T) {
	tests := []struct {
		key  Key
		want string
	}{
		{NewKey("slack", "T1", "C1", ""), "slack:T1:C1"},
		{NewKey("slack", "T1", "C1", "1700000000.000100"), "slack:T1:C1:1700000000.000100"},
		{NewKey("http", "", "c-42", ""), "http::c-42"},
		{NewKey("telegram", "", "-100123", "7"), "telegram::-100123:7"},
		{NewKey("x", "a:b", "50%", "c:%3A"), "x:a%3Ab:50%25:c%3A%253A"},
	}
	for _, tt := range tests {
		if got := tt.key.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.key, got, tt.want)
		}
		back, err := ParseKey(tt.want)
		if err != nil || back != tt.key {
			t.Errorf("ParseKey(%q) = %+v, %v; want %+v", tt.want, back, err, tt.key)
		}
	}
}

func TestParseKeyRefuses(t *testing.T) {
	for _, s := range []string{"", "k", "http:x", "a:b:c:d:e", "a:b:c:", "a:b%:c", "a:b%3a:c"} {
		if k, err := ParseKey(s); !errors.Is(err, ErrBadKey) {
			t.Errorf("ParseKey(%q) = %+v, %v; want ErrBadKey", s, k, err)
		}
	}
}

// TestKeyInJSON: a Key in a record is its stored form, as the string it
// replaced was, and the zero Key is empty.
func TestKeyInJSON(t *testing.T) {
	b, err := json.Marshal(InFlight{ID: "t", Key: NewKey("slack", "T", "C", "")})
	if err != nil {
		t.Fatal(err)
	}
	var back InFlight
	if err := json.Unmarshal(b, &back); err != nil || back.Key != NewKey("slack", "T", "C", "") {
		t.Fatalf("%s read back as %+v, %v", b, back, err)
	}
	b, _ = json.Marshal(Approval{ID: "a"})
	var a Approval
	if err := json.Unmarshal(b, &a); err != nil || !a.Key.IsZero() {
		t.Fatalf("%s read back as %+v, %v", b, a, err)
	}
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"slack:T1:C1", "http::c-42", "x:a%3Ab:50%25:c%3A%253A", "a:b%:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey(s)
		if err != nil {
			return
		}
		if got := k.String(); got != s {
			t.Fatalf("ParseKey(%q).String() = %q", s, got)
		}
	})
}
