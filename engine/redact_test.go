package engine

import (
	"encoding/base64"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRedact(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"anthropic key", "invalid x-api-key: sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AAA", "invalid x-api-key: [redacted]"},
		{"openai key", "Incorrect API key provided: sk-proj-abc123DEF456ghi789JKL.", "Incorrect API key provided: [redacted]."},
		{"slack bot token", "auth failed for xoxb-1234567890-0987654321-AbCdEfGhIjKl", "auth failed for [redacted]"},
		{"slack user and app tokens", "xoxp-12345678-abc xapp-1-A0123-4567-abcdef", "[redacted] [redacted]"},
		{"bearer", "Authorization: Bearer abc.def-ghi_jkl~mno", "Authorization: Bearer [redacted]"},
		{"bearer lowercase", `header "bearer eyJhbGciOiJIUzI1NiJ9.e30.x" sent`, `header "bearer [redacted]" sent`},
		{"authorization without bearer", "authorization: c2VjcmV0OnBhc3N3b3Jk", "authorization: [redacted]"},
		{"telegram bot token", "GET https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe", "GET https://api.telegram.org/bot[redacted]/getMe"},
		{"telegram token alone", "token 123456:AAEhBP0av28uFuLYRgDfvdL6PSAuJALYIgw", "token [redacted]"},
		{"github classic", "remote: ghp_16C7e42F292c6912E7710c838347Ae178B4a rejected", "remote: [redacted] rejected"},
		{"github fine-grained", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "[redacted]"},
		{"NAME=value", "env: ANTHROPIC_API_KEY=abc123 OTHER=fine", "env: ANTHROPIC_API_KEY=[redacted] OTHER=fine"},
		{"NAME=value of each kind", "GH_TOKEN=t1 AWS_SECRET=s2 DB_PASSWORD=p3 api_key=k4", "GH_TOKEN=[redacted] AWS_SECRET=[redacted] DB_PASSWORD=[redacted] api_key=[redacted]"},
		{"NAME=\"quoted value\"", `CURSOR_API_KEY="with spaces" done`, `CURSOR_API_KEY=[redacted] done`},
		{"flag with value", "agent --api-key key_live_1 -p hi", "agent --api-key [redacted] -p hi"},
		{"flag=value", "agent --api-key=key_live_1 -p hi", "agent --api-key=[redacted] -p hi"},
		{"json field", `{"api_key":"abc\"def","user":"bob"}`, `{"api_key":"[redacted]","user":"bob"}`},
		{"aws and google", "AKIAIOSFODNN7EXAMPLE and AIzaSyA-1234567890abcdefghijklmnopqrstu", "[redacted] and [redacted]"},
		{"random base64", "key dGhpcyBpcyBhIHNlY3JldCBrZXkgb2YgMzIgYnl0ZXM= given", "key [redacted] given"},
		{"random hex", "secret 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 x", "secret [redacted] x"},

		// Text that is not a secret stays.
		{"plain error", "Error: connect ECONNREFUSED 127.0.0.1:443", "Error: connect ECONNREFUSED 127.0.0.1:443"},
		{"no key given", "Invalid API key. Please run /login", "Invalid API key. Please run /login"},
		{"uuid session", "No conversation found with session ID: 123e4567-e89b-12d3-a456-426614174000", "No conversation found with session ID: 123e4567-e89b-12d3-a456-426614174000"},
		{"path", "at Object.<anonymous> (/home/Alice/src/MyProject2024/internal/server/main.js:12:5)", "at Object.<anonymous> (/home/Alice/src/MyProject2024/internal/server/main.js:12:5)"},
		{"long path", "/usr/local/lib/node_modules/@anthropic-ai/claude-code/vendor/ripgrep/x64-linux/rg", "/usr/local/lib/node_modules/@anthropic-ai/claude-code/vendor/ripgrep/x64-linux/rg"},
		{"camel case", "ThisIsAVeryLongCamelCaseIdentifier2ForTestingHTTPServer failed", "ThisIsAVeryLongCamelCaseIdentifier2ForTestingHTTPServer failed"},
		{"words", "Allowed values are abcdefghijklmnopqrstuvwxyzabcdefghij", "Allowed values are abcdefghijklmnopqrstuvwxyzabcdefghij"},
		{"model name", "model claude-opus-4-1-20250805 not found", "model claude-opus-4-1-20250805 not found"},
		{"a key mentioned by name", "set ANTHROPIC_API_KEY or run claude login", "set ANTHROPIC_API_KEY or run claude login"},
		{"flag without value", "unknown option --api-key", "unknown option --api-key"},
		{"number", "exit code 1 after 1234567890123456789012345678901234567890 ms", "exit code 1 after 1234567890123456789012345678901234567890 ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := redact(tc.in); got != tc.want {
				t.Errorf("redact(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestRedactRandomKeys checks keys of no known shape: random base64,
// base64url, alphanumeric and hex strings of 32 characters or more, from a
// fixed seed, all disappear.
func TestRedactRandomKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	for i := range 2000 {
		b := make([]byte, 24+rng.IntN(40))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		var key string
		switch i % 3 {
		case 0:
			key = base64.StdEncoding.EncodeToString(b)
		case 1:
			key = hex.EncodeToString(b)
		default:
			k := make([]byte, 32+rng.IntN(32))
			for j := range k {
				k[j] = alnum[rng.IntN(len(alnum))]
			}
			key = string(k)
		}
		// A base64 key may hold a '/' that splits it into runs shorter
		// than a candidate; they are not checked here.
		if strings.Contains(key, "/") || strings.Contains(key, "+") {
			continue
		}
		if got := redact("failed: " + key + "\n"); strings.Contains(got, key[:16]) {
			t.Fatalf("key %q survived: %q", key, got)
		}
	}
}

func FuzzRedact(f *testing.F) {
	f.Add("Error: sk-ant-api03-AbCdEfGhIjKlMnOpQrSt", "exit 1")
	f.Add("TOKEN=", "Bearer")
	f.Add("--api-key", `{"token":"`)
	f.Fuzz(func(t *testing.T, before, after string) {
		out := redact(before + " " + after)
		if utf8.ValidString(before) && utf8.ValidString(after) && !utf8.ValidString(out) {
			t.Fatalf("redact made valid UTF-8 invalid: %q", out)
		}
		if again := redact(out); again != out {
			t.Fatalf("redact is not stable:\n once  %q\n twice %q", out, again)
		}
		// Secrets of known shapes planted between any text disappear.
		for _, secret := range []string{
			"sk-ant-api03-Zx9Qw8Er7Ty6Ui5Op4As3Df2",
			"xoxb-1234567890-ZzYyXxWwVvUu",
			"123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",
			"ghp_Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz",
		} {
			s := redact(before + " " + secret + " " + after)
			if strings.Contains(s, secret[8:]) {
				t.Fatalf("secret %q survived in %q", secret, s)
			}
		}
	})
}
