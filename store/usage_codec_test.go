package store

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

var usageSamples = []Usage{
	{},
	{Turns: 1},
	{Turns: 3, InputTokens: 30, OutputTokens: 60, CostUSD: 1.5, DurationMS: 3000},
	{Turns: 7, CostUSD: 0.000000123},
	{Turns: 2, CostUSD: 1e21, DurationMS: -4},
	{Turns: 1, CostUSD: 1234567.25, OutputTokens: math.MaxInt64},
	{Turns: -1, CostUSD: -0.1},
}

// TestUsageCodecIsJSON: totals are written as json.Marshal writes them and
// read back as json.Unmarshal reads them, so older and newer files agree.
func TestUsageCodecIsJSON(t *testing.T) {
	for _, u := range usageSamples {
		got, err := encodeUsage(u)
		want, _ := json.Marshal(u)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("encodeUsage(%+v) = %s, %v; json.Marshal writes %s", u, got, err, want)
		}
		var back Usage
		if err := decodeUsage(got, &back); err != nil || back != u {
			t.Errorf("decodeUsage(%s) = %+v, %v", got, back, err)
		}
	}
	if _, err := encodeUsage(Usage{CostUSD: math.NaN()}); err == nil {
		t.Error("a NaN cost was encoded")
	}
	for _, raw := range []string{`{ "turns": 2 }`, `{"turns":2,"note":"x"}`, `{"turns":2.5}`, `{"turns":+2}`, `{"cost_usd":Inf}`, `[]`, `{"turns":2`} {
		var fast, slow Usage
		errFast, errSlow := decodeUsage([]byte(raw), &fast), json.Unmarshal([]byte(raw), &slow)
		if (errFast == nil) != (errSlow == nil) || fast != slow {
			t.Errorf("decodeUsage(%s) = %+v, %v; json.Unmarshal: %+v, %v", raw, fast, errFast, slow, errSlow)
		}
	}
}

// FuzzDecodeUsage: decodeUsage reads whatever it is given as
// json.Unmarshal does.
func FuzzDecodeUsage(f *testing.F) {
	for _, u := range usageSamples {
		raw, _ := json.Marshal(u)
		f.Add(raw)
	}
	f.Add([]byte(`{"turns":1,"turns":2}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var fast, slow Usage
		errFast, errSlow := decodeUsage(raw, &fast), json.Unmarshal(raw, &slow)
		if (errFast == nil) != (errSlow == nil) || errSlow == nil && fast != slow {
			t.Errorf("decodeUsage(%q) = %+v, %v; json.Unmarshal: %+v, %v", raw, fast, errFast, slow, errSlow)
		}
	})
}
