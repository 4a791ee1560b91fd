package parser

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the *.golden.ndjson files from the parsers' output")

// normalize runs a whole CLI output through the engine's parser and a Guard,
// as `bot events` and the engine do, and returns the events as JSON lines.
func normalize(t testing.TB, newParser func() Parser, output []byte) []byte {
	t.Helper()
	g := NewGuard(newParser())
	var out bytes.Buffer
	emit := func(e Event) {
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatalf("marshal %+v: %v", e, err)
		}
		out.Write(b)
		out.WriteByte('\n')
	}
	if err := ReadLines(bytes.NewReader(output), func(line []byte) {
		for _, e := range g.Parse(line) {
			emit(e)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if e, ok := g.End(true, "the output ended before a result line"); ok {
		emit(e)
	}
	return out.Bytes()
}

// TestGolden checks every hand-built fixture under testdata/<engine dir>
// against its NAME.golden.ndjson. Run with -update to rewrite the goldens,
// then review the diff. Recordings of the real CLI (recorded-*) have their
// own test.
func TestGolden(t *testing.T) {
	for dir, newParser := range fixtureParsers {
		inputs, err := filepath.Glob(filepath.Join("testdata", dir, "*.ndjson"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, in := range inputs {
			base := filepath.Base(in)
			if strings.HasSuffix(base, ".golden.ndjson") || strings.HasPrefix(base, "recorded-") {
				continue
			}
			n++
			t.Run(dir+"/"+base, func(t *testing.T) {
				output, err := os.ReadFile(in)
				if err != nil {
					t.Fatal(err)
				}
				got := normalize(t, newParser, output)
				golden := strings.TrimSuffix(in, ".ndjson") + ".golden.ndjson"
				if *update {
					if err := os.WriteFile(golden, got, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test ./parser -run TestGolden -update to create it)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("events of %s differ from %s\ngot:\n%s\nwant:\n%s", in, golden, got, want)
				}
			})
		}
		if n == 0 {
			t.Errorf("no fixtures in testdata/%s", dir)
		}
	}
}
