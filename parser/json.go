package parser

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// This file holds a small validating JSON reader. The parsers walk each
// line once with it, decode only the fields they need and skip the rest
// without building values, which is several times faster than
// encoding/json on the large tool outputs the CLIs print. It accepts exactly
// the JSON grammar (RFC 8259); keys match exactly (not case-insensitively as
// encoding/json does for struct fields); strings decode as encoding/json
// decodes them (invalid UTF-8 and lone surrogates become U+FFFD).

// maxDepth bounds nesting, like encoding/json, so a hostile line cannot
// exhaust the stack.
const maxDepth = 10000

// reader walks one JSON text. After the first syntax error bad is set and
// every method returns a zero value; callers check bad once at the end.
type reader struct {
	b     []byte
	i     int
	depth int
	bad   bool
}

func (r *reader) fail() { r.bad = true; r.i = len(r.b) }

func (r *reader) ws() {
	for r.i < len(r.b) && r.b[r.i] <= ' ' {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// peek returns the first byte of the next value (after white space), or 0.
func (r *reader) peek() byte {
	r.ws()
	if r.i < len(r.b) {
		return r.b[r.i]
	}
	return 0
}

// end reports whether only white space is left and no error was seen.
func (r *reader) end() bool {
	r.ws()
	return !r.bad && r.i == len(r.b)
}

// object iterates the members of the object at the current position. Call
// it as `for r.object(&first) { key := r.key(); ...value... }`: each call
// moves past '{' or ',' and reports whether a member follows; key then reads
// the member's name and the ':'. The caller must consume each value (decode
// or skip it). object returns false at '}' (consuming it) or on error.
func (r *reader) object(first *bool) bool { return r.next(first, '{', '}') }

// array iterates the elements of the array at the current position, like
// object: `for r.array(&first) { ...value... }`.
func (r *reader) array(first *bool) bool { return r.next(first, '[', ']') }

// next is object and array, for the container between opening and closing.
func (r *reader) next(first *bool, opening, closing byte) bool {
	if r.bad {
		return false
	}
	r.ws()
	if *first {
		*first = false
		if r.i >= len(r.b) || r.b[r.i] != opening {
			r.fail()
			return false
		}
		r.i++
		if r.depth++; r.depth > maxDepth {
			r.fail()
			return false
		}
		if r.peek() == closing {
			r.i++
			r.depth--
			return false
		}
		return true
	}
	if r.i < len(r.b) {
		switch r.b[r.i] {
		case ',':
			r.i++
			return true
		case closing:
			r.i++
			r.depth--
			return false
		}
	}
	r.fail()
	return false
}

// key reads a member name and the following ':'. The returned bytes are the
// raw name between the quotes when it has no escapes (aliasing the line),
// else the decoded name.
func (r *reader) key() []byte {
	raw, esc := r.rawString()
	r.ws()
	if r.i >= len(r.b) || r.b[r.i] != ':' {
		r.fail()
		return nil
	}
	r.i++
	if esc {
		return []byte(unescape(raw))
	}
	return raw
}

// rawString reads a string and returns the bytes between its quotes, and
// whether they contain escapes. It validates escapes and rejects control
// characters.
func (r *reader) rawString() (raw []byte, escaped bool) {
	r.ws()
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		r.fail()
		return nil, false
	}
	start := r.i + 1
	b := r.b
	for i := start; i < len(b); {
		// Eight bytes at a time up to the first byte that needs a look.
		if i+8 <= len(b) {
			m := special8(binary.LittleEndian.Uint64(b[i:]))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		} else if c := b[i]; c != '"' && c != '\\' && c >= 0x20 {
			i++
			continue
		}
		c := b[i]
		switch {
		case c == '"':
			r.i = i + 1
			return b[start:i], escaped
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				r.fail()
				return nil, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex4(b[i+2:i+6]) {
					r.fail()
					return nil, false
				}
				i += 6
			default:
				r.fail()
				return nil, false
			}
		default: // control character
			r.fail()
			return nil, false
		}
	}
	r.fail()
	return nil, false
}

// special8 marks the bytes of x (little-endian: the first byte lowest)
// that are a quote, a backslash or a control character, i.e. that a string
// scan must look at: their high bits are set in the result. (SWAR: borrows
// can mark bytes above a marked byte falsely, never below, so the lowest
// mark is always a true one.)
func special8(x uint64) uint64 {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	quote := x ^ (ones * '"')
	bslash := x ^ (ones * '\\')
	hasQuote := (quote - ones) &^ quote
	hasBslash := (bslash - ones) &^ bslash
	hasCtl := (x - ones*0x20) &^ x
	return (hasQuote | hasBslash | hasCtl) & highs
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// str reads a string value and returns it decoded. A JSON null reads as "".
// Any other kind of value is skipped and reads as "" with ok false.
func (r *reader) str() (s string, ok bool) {
	switch r.peek() {
	case '"':
		raw, esc := r.rawString()
		if r.bad {
			return "", false
		}
		if esc {
			return unescape(raw), true
		}
		return validString(raw), true
	case 'n':
		r.skip()
		return "", true
	}
	r.skip()
	return "", false
}

// boolean reads true or false; anything else is skipped and reads false.
func (r *reader) boolean() bool {
	if r.peek() == 't' {
		return r.literal("true")
	}
	r.skip()
	return false
}

// number reads a number value and returns its text; anything else (null
// included) is skipped and returns nil.
func (r *reader) number() []byte {
	c := r.peek()
	if c != '-' && (c < '0' || c > '9') {
		r.skip()
		return nil
	}
	start := r.i
	r.skipNumber()
	if r.bad {
		return nil
	}
	return r.b[start:r.i]
}

// raw skips one value and returns its bytes, aliasing the line.
func (r *reader) raw() []byte {
	r.ws()
	start := r.i
	r.skip()
	if r.bad {
		return nil
	}
	return r.b[start:r.i]
}

// skip validates and passes over one value of any kind.
func (r *reader) skip() {
	switch r.peek() {
	case '"':
		r.rawString()
	case '{':
		first := true
		for r.object(&first) {
			r.rawString()
			r.ws()
			if r.i >= len(r.b) || r.b[r.i] != ':' {
				r.fail()
				return
			}
			r.i++
			r.skip()
			r.ws()
		}
	case '[':
		first := true
		for r.array(&first) {
			r.skip()
			r.ws()
		}
	case 't':
		r.literal("true")
	case 'f':
		r.literal("false")
	case 'n':
		r.literal("null")
	default:
		r.skipNumber()
	}
}

func (r *reader) literal(lit string) bool {
	if len(r.b)-r.i >= len(lit) && string(r.b[r.i:r.i+len(lit)]) == lit {
		r.i += len(lit)
		return true
	}
	r.fail()
	return false
}

// skipNumber passes over a number per the JSON grammar:
// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func (r *reader) skipNumber() {
	b, i := r.b, r.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		r.fail()
		return
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			r.fail()
			return
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			r.fail()
			return
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	}
	r.i = i
}

// validString converts raw string bytes without escapes to a string,
// replacing each invalid UTF-8 byte with U+FFFD as encoding/json does.
func validString(raw []byte) string {
	for _, c := range raw {
		if c >= utf8.RuneSelf {
			if utf8.Valid(raw) {
				return string(raw)
			}
			return unescape(raw)
		}
	}
	return string(raw)
}

// unescape decodes the bytes between a string's quotes, already validated
// by rawString: escapes are resolved, surrogate pairs joined, and lone
// surrogates and invalid UTF-8 bytes become U+FFFD (encoding/json's rules).
func unescape(raw []byte) string {
	out := make([]byte, 0, len(raw))
	for len(raw) > 0 {
		n := bytes.IndexByte(raw, '\\')
		if n < 0 {
			n = len(raw)
		}
		out = appendValidUTF8(out, raw[:n])
		raw = raw[n:]
		if len(raw) == 0 {
			break
		}
		switch raw[1] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r1 := hex4(raw[2:6])
			raw = raw[6:]
			if utf16.IsSurrogate(r1) {
				if len(raw) >= 6 && raw[0] == '\\' && raw[1] == 'u' {
					if d := utf16.DecodeRune(r1, hex4(raw[2:6])); d != utf8.RuneError {
						raw = raw[6:]
						out = utf8.AppendRune(out, d)
						continue
					}
				}
				r1 = utf8.RuneError
			}
			out = utf8.AppendRune(out, r1)
			continue
		default: // '"', '\\', '/'
			out = append(out, raw[1])
		}
		raw = raw[2:]
	}
	if len(out) == 0 {
		return ""
	}
	// out is never written again: hand its bytes to the string as
	// strings.Builder does, saving a copy of large tool outputs.
	return unsafe.String(&out[0], len(out))
}

// appendValidUTF8 appends s to out, each invalid UTF-8 byte replaced by
// U+FFFD.
func appendValidUTF8(out, s []byte) []byte {
	if utf8.Valid(s) {
		return append(out, s...)
	}
	for len(s) > 0 {
		r, size := utf8.DecodeRune(s)
		if r == utf8.RuneError && size == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, s[:size]...)
		}
		s = s[size:]
	}
	return out
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// parseInt reads a JSON number as an int64: integers exactly, other numbers
// rounded toward zero. ok is false for nil or out-of-range input.
func parseInt(num []byte) (int64, bool) {
	if num == nil {
		return 0, false
	}
	if n, err := strconv.ParseInt(string(num), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil || f != f || f >= 1<<63 || f < -(1<<63) {
		return 0, false
	}
	return int64(f), true
}

// parseFloat reads a JSON number as a float64.
func parseFloat(num []byte) (float64, bool) {
	if num == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil {
		return 0, false
	}
	return f, true
}
