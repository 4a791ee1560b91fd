package parser

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestEventsDoNotAliasTheLine overwrites each line after parsing it, as
// ReadLines reuses its buffer, and checks that the events did not change.
func TestEventsDoNotAliasTheLine(t *testing.T) {
	for dir, newParser := range fixtureParsers {
		files, _ := filepath.Glob(filepath.Join("testdata", dir, "*.ndjson"))
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			p := newParser()
			for _, line := range bytes.Split(data, []byte("\n")) {
				buf := bytes.Clone(line)
				events := p.Parse(buf)
				before := marshalAll(t, events)
				for i := range buf {
					buf[i] = 'X'
				}
				if after := marshalAll(t, events); after != before {
					t.Fatalf("%s: events changed when the line buffer was reused:\nbefore %s\nafter  %s", name, before, after)
				}
			}
		}
	}
}

func marshalAll(t *testing.T, events []Event) string {
	var b bytes.Buffer
	for _, e := range events {
		j, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}
