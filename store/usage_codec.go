package store

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// Usage totals are JSON (`{"turns":3,"input_tokens":30,"cost_usd":1.5}`,
// zero fields left out). Every finished turn reads and rewrites six of
// them, so they are written and read here without reflection; what the
// fast reader does not recognise goes to encoding/json, which also reads
// what older versions wrote.

// encodeUsage returns u as JSON, as json.Marshal would write it.
func encodeUsage(u Usage) ([]byte, error) {
	if math.IsNaN(u.CostUSD) || math.IsInf(u.CostUSD, 0) {
		return json.Marshal(u) // its error
	}
	b := make([]byte, 0, 96)
	b = append(b, `{"turns":`...)
	b = strconv.AppendInt(b, int64(u.Turns), 10)
	if u.InputTokens != 0 {
		b = strconv.AppendInt(append(b, `,"input_tokens":`...), u.InputTokens, 10)
	}
	if u.OutputTokens != 0 {
		b = strconv.AppendInt(append(b, `,"output_tokens":`...), u.OutputTokens, 10)
	}
	if u.CostUSD != 0 {
		b = appendFloat(append(b, `,"cost_usd":`...), u.CostUSD)
	}
	if u.DurationMS != 0 {
		b = strconv.AppendInt(append(b, `,"duration_ms":`...), u.DurationMS, 10)
	}
	return append(b, '}'), nil
}

// appendFloat appends f as encoding/json writes a float64: decimal, or an
// exponent (without a leading zero) below 1e-6 and from 1e21.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-07 → e-7
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// decodeUsage reads a usage total into u (zeroing it first).
func decodeUsage(raw []byte, u *Usage) error {
	*u = Usage{}
	if decodeUsageFast(raw, u) {
		return nil
	}
	*u = Usage{}
	return json.Unmarshal(raw, u)
}

// decodeUsageFast reads the shape encodeUsage writes: an object of known
// keys with plain numbers and no spaces. It reports false for anything
// else.
func decodeUsageFast(raw []byte, u *Usage) bool {
	rest, ok := bytes.CutPrefix(raw, []byte("{"))
	if !ok {
		return false
	}
	for len(rest) > 0 && rest[0] != '}' {
		if rest[0] != '"' {
			return false
		}
		end := bytes.IndexByte(rest[1:], '"')
		if end < 0 || len(rest) < end+3 || rest[end+2] != ':' {
			return false
		}
		key := string(rest[1 : end+1])
		rest = rest[end+3:]
		n := bytes.IndexAny(rest, ",}")
		if n <= 0 {
			return false
		}
		num := string(rest[:n])
		if !jsonNumber(num) {
			return false
		}
		rest = rest[n:]
		if rest[0] == ',' {
			if rest = rest[1:]; len(rest) == 0 || rest[0] != '"' {
				return false
			}
		}
		var err error
		switch key {
		case "turns":
			var v int64
			v, err = strconv.ParseInt(num, 10, 0)
			u.Turns = int(v)
		case "input_tokens":
			u.InputTokens, err = strconv.ParseInt(num, 10, 64)
		case "output_tokens":
			u.OutputTokens, err = strconv.ParseInt(num, 10, 64)
		case "cost_usd":
			u.CostUSD, err = strconv.ParseFloat(num, 64)
		case "duration_ms":
			u.DurationMS, err = strconv.ParseInt(num, 10, 64)
		default:
			return false
		}
		if err != nil {
			return false
		}
	}
	return string(rest) == "}"
}

// jsonNumber reports whether s is a number as JSON writes one:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? (strconv also takes
// "+1", "01", "Inf" and "0x1p3").
func jsonNumber(s string) bool {
	digits := func(i int) int { // the index after the digits from i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i
	}
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digits(i)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(s)
}
