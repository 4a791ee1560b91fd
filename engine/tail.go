package engine

import (
	"bytes"
	"strings"
)

// tail keeps the end of a byte stream (a child's stderr): at most maxBytes
// bytes, of which String returns the last maxLines lines. Not safe for
// concurrent use.
type tail struct {
	buf      []byte
	maxLines int
	maxBytes int
}

func newTail(maxLines, maxBytes int) *tail {
	return &tail{maxLines: maxLines, maxBytes: maxBytes}
}

// Write implements io.Writer; it never fails.
func (t *tail) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > t.maxBytes {
		p = p[len(p)-t.maxBytes:]
	}
	if over := len(t.buf) + len(p) - t.maxBytes; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String returns the last lines kept, trimmed, joined by "\n"; invalid
// UTF-8 (e.g. a multi-byte character cut by the byte limit) is replaced.
func (t *tail) String() string {
	b := bytes.TrimSpace(t.buf)
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) > t.maxLines {
		lines = lines[len(lines)-t.maxLines:]
	}
	return strings.ToValidUTF8(string(bytes.Join(lines, []byte("\n"))), "\uFFFD")
}
