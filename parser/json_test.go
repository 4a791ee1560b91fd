package parser

import (
	"encoding/json"
	"strings"
	"testing"
)

// checkReader compares the reader with encoding/json on data: both must
// agree on whether data is valid JSON, and a valid string must decode to
// the same Go string.
func checkReader(t *testing.T, data []byte) {
	t.Helper()
	r := reader{b: data}
	r.skip()
	mine := r.end()
	if std := json.Valid(data); mine != std {
		t.Fatalf("valid(%q): reader says %v, encoding/json %v", data, mine, std)
	}
	if !mine {
		return
	}
	var want string
	if json.Unmarshal(data, &want) != nil {
		return // not a string
	}
	r = reader{b: data}
	got, ok := r.str()
	if !ok || got != want {
		t.Fatalf("string %q: reader %q (ok %v), encoding/json %q", data, got, ok, want)
	}
}

var readerSeeds = []string{
	`{}`, `[]`, `""`, `"a"`, `0`, `-0`, `-0.5e+10`, `1E9`, `true`, `false`, `null`,
	` {"a" : [1, 2.5, {"b": null}], "c": "d" } `,
	`"\u00e9\ud83d\ude00\ud800\udc00\ud800x\udc00\\\/\b\f\n\r\t\""`,
	"\"raw \xff\xfe bytes \xe2\x82\"", `"\u0000"`, `"\uDBFF\uDFFF"`,
	// invalid
	``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{1:2}`, `01`, `1.`, `.5`, `-`, `1e`, `+1`,
	`"\x"`, `"\u12"`, `"\u12g4"`, "\"ctl \x01\"", `"open`, `tru`, `nul`, `[1 2]`, `{"a":1 "b":2}`, `1 2`, `"a"x`,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
}

func TestReaderAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range readerSeeds {
		checkReader(t, []byte(s))
	}
}

func FuzzReader(f *testing.F) {
	for _, s := range readerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkReader(t, data)
	})
}

func TestMarshalJSONMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "<b>&amp;</b>", "\x00\x1f\x7f", "\u2028\u2029", "é😀", "bad \xff\xc3(", `"\`, "tab\tnl\ncr\r"} {
		b, err := (Event{Type: Text, Content: s}).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back struct{ Type, Content string }
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q marshals to invalid JSON %s: %v", s, b, err)
		}
		want := strings.ToValidUTF8(s, "\ufffd")
		if s == "bad \xff\xc3(" {
			want = "bad \ufffd\ufffd("
		}
		if back.Type != "text" || back.Content != want {
			t.Errorf("%q round-trips as %q", s, back.Content)
		}
	}
}

// TestReaderEveryByteEverywhere puts each byte value at each position of
// strings around the eight-byte scanning width, and checks the reader
// against encoding/json.
func TestReaderEveryByteEverywhere(t *testing.T) {
	for n := 1; n <= 17; n++ {
		for pos := range n {
			for c := range 256 {
				s := []byte(strings.Repeat("é", n)[:n]) // mixes bytes >= 0x80 in
				s[pos] = byte(c)
				checkReader(t, append(append([]byte{'"'}, s...), '"'))
				checkReader(t, append(append([]byte(`"\\`), s...), '"'))
			}
		}
	}
}
