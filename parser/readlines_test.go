package parser

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func collectLines(t *testing.T, r io.Reader) ([]string, error) {
	t.Helper()
	var lines []string
	err := ReadLines(r, func(line []byte) { lines = append(lines, string(line)) })
	return lines, err
}

func TestReadLines(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string
	}{
		{"empty", "", nil},
		{"one terminated line", "a\n", []string{"a"}},
		{"last line without newline", "a\nb", []string{"a", "b"}},
		{"CRLF", "a\r\nb\r\n", []string{"a", "b"}},
		{"only one CR is stripped, inner CRs stay", "a\r\r\nb\rc\n", []string{"a\r", "b\rc"}},
		{"empty lines in the middle", "\n\na\n\n", []string{"", "", "a", ""}},
		{"a lone CR at EOF", "x\r", []string{"x"}},
	}
	for _, c := range cases {
		for _, split := range []struct {
			name string
			r    func(string) io.Reader
		}{
			{"whole", func(s string) io.Reader { return strings.NewReader(s) }},
			{"byte by byte", func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) }},
		} {
			t.Run(c.name+"/"+split.name, func(t *testing.T) {
				got, err := collectLines(t, split.r(c.in))
				if err != nil {
					t.Fatal(err)
				}
				if strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
					t.Errorf("lines %q, want %q", got, c.want)
				}
			})
		}
	}
}

// TestReadLinesHuge delivers lines far longer than the read buffer (16 MiB
// and a few around the buffer's size) whole and in order.
func TestReadLinesHuge(t *testing.T) {
	huge := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB
	sizes := []int{readBufferSize - 1, readBufferSize, readBufferSize + 1, 3*readBufferSize + 7}
	var in bytes.Buffer
	var want [][]byte
	for _, n := range sizes {
		l := bytes.Repeat([]byte{'x'}, n)
		want = append(want, l)
		in.Write(l)
		in.WriteByte('\n')
	}
	want = append(want, huge, []byte("short"), huge[:5<<20])
	in.Write(huge)
	in.WriteString("\r\nshort\n")
	in.Write(huge[:5<<20]) // unterminated at EOF

	var got [][]byte
	err := ReadLines(iotest.HalfReader(&in), func(line []byte) { got = append(got, bytes.Clone(line)) })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("line %d: got %d bytes, want %d", i, len(got[i]), len(want[i]))
		}
	}
}

// TestReadLinesHugeJSONLine parses a 16 MiB tool result line end to end.
func TestReadLinesHugeJSONLine(t *testing.T) {
	out := strings.Repeat("line of output\\n", 16<<20/16)
	stream := `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"` + out + `"}]}}` + "\n" +
		`{"type":"result","is_error":false,"session_id":"s"}` + "\n"
	got := string(normalize(t, NewClaudeCode, []byte(stream)))
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 2 || len(lines[0]) < 16<<20 || lines[1] != `{"type":"done","session_id":"s"}` {
		t.Fatalf("got %d lines, first %d bytes, last %q", len(lines), len(lines[0]), lines[len(lines)-1])
	}
}

func TestReadLinesError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("a\npartial"), iotest.ErrReader(boom))
	got, err := collectLines(t, r)
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want it to wrap %v", err, boom)
	}
	if strings.Join(got, "|") != "a|partial" {
		t.Errorf("lines %q, want the complete line and the partial one", got)
	}
}

func TestReadLinesDoesNotCopyShortLines(t *testing.T) {
	in := strings.Repeat(`{"type":"assistant","message":{"content":[{"type":"text","text":"x"}]}}`+"\n", 1000)
	allocs := testing.AllocsPerRun(10, func() {
		_ = ReadLines(strings.NewReader(in), func([]byte) {})
	})
	if allocs > 5 { // the bufio.Reader and its buffer; nothing per line
		t.Errorf("%v allocations for 1000 short lines, want a handful", allocs)
	}
}

// TestReadLineBatchesFlush: flush comes after the last whole line of each
// read, also when the read ended inside the next line, and never between
// lines of one read.
func TestReadLineBatchesFlush(t *testing.T) {
	var got []string
	pr, pw := io.Pipe() // one Write, one read
	go func() {
		pw.Write([]byte("a\nb\nc"))
		pw.Write([]byte("d\ne\n"))
		pw.Write([]byte("f"))
		pw.Close()
	}()
	err := ReadLineBatches(pr, func(line []byte) { got = append(got, string(line)) }, func() { got = append(got, "|") })
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.Join(got, " "); s != "a b | cd e | f |" {
		t.Errorf("lines and flushes: %q, want %q", s, "a b | cd e | f |")
	}
}
