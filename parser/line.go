package parser

import (
	"bytes"
	"encoding/json"
	"strings"
)

// jsonLine prepares one stdout line for decoding: ANSI escape sequences are
// removed (a safety net; the CLIs print none) and surrounding white space
// trimmed. ok is false when what is left cannot be a JSON object.
func jsonLine(line []byte) ([]byte, bool) {
	if bytes.IndexByte(line, 0x1b) >= 0 {
		line = stripANSI(line)
	}
	line = bytes.TrimSpace(line)
	return line, len(line) >= 2 && line[0] == '{'
}

// stripANSI returns line without ANSI escape sequences: CSI sequences
// (ESC [ parameters final-byte), OSC sequences (ESC ] ... BEL or ESC \) and
// two-byte escapes. It copies; line is not modified.
func stripANSI(line []byte) []byte {
	out := make([]byte, 0, len(line))
	for i := 0; i < len(line); {
		c := line[i]
		if c != 0x1b {
			out = append(out, c)
			i++
			continue
		}
		i++
		if i >= len(line) {
			break
		}
		switch line[i] {
		case '[': // CSI: parameter and intermediate bytes, then a final byte 0x40-0x7e
			i++
			for i < len(line) && (line[i] < 0x40 || line[i] > 0x7e) {
				i++
			}
			i++
		case ']': // OSC: up to BEL or ST (ESC \)
			i++
			for i < len(line) {
				if line[i] == 0x07 {
					i++
					break
				}
				if line[i] == 0x1b && i+1 < len(line) && line[i+1] == '\\' {
					i += 2
					break
				}
				i++
			}
		default: // a two-byte escape such as ESC ( B's first half or ESC =
			i++
		}
	}
	return out
}

// objectOrEmpty returns raw when it is a JSON object, else nil (which an
// Event marshals as {}). raw aliases the line, so it is copied.
func objectOrEmpty(raw []byte) json.RawMessage {
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	return bytes.Clone(raw)
}

// joinStrings joins the string elements of a raw JSON array with sep;
// other elements are left out.
func joinStrings(raw []byte, sep string) string {
	if len(raw) == 0 || raw[0] != '[' {
		return ""
	}
	var parts []string
	r := reader{b: raw}
	first := true
	for r.array(&first) {
		if s, ok := r.str(); ok && s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, sep)
}
