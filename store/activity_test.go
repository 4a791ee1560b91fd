package store

import (
	"testing"
	"time"
)

// FuzzLastUsedOf: the time read without decoding is the decoded one,
// whatever the record's strings hold.
func FuzzLastUsedOf(f *testing.F) {
	f.Add("claude-code", `"u":1`, "sess", int64(1764650000000000000), `x","u":3`)
	f.Add("", "", "", int64(0), "")
	f.Add(`\`, `\"u\":`, `"`, int64(1), `}`)
	f.Fuzz(func(t *testing.T, engine, model, session string, ns int64, other string) {
		c := Conversation{Key: NewKey("slack", "T", "C", ""), Engine: engine, Model: model, SessionID: session, Sessions: []string{other}}
		if ns > 0 {
			c.LastUsed = time.Unix(0, ns)
		}
		raw, err := encodeConversation(c)
		if err != nil {
			t.Skip()
		}
		want, err := decodeConversation(c.Key, raw)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := LastUsedOf(raw)
		if ok && !got.Equal(want.LastUsed) {
			t.Fatalf("record %s: read %v, decoded %v", raw, got, want.LastUsed)
		}
		if !ok {
			t.Fatalf("record %s: not read", raw)
		}
	})
}
