package engine

import (
	"regexp"
	"strings"
	"unicode"
)

// redacted replaces a secret in text that reaches the chat.
const redacted = "[redacted]"

// secretShapes match keys and tokens by their known shapes. Groups 1 and,
// where present, 3 are kept (a variable's name, "Bearer "); group 2 is the
// secret.
var secretShapes = []*regexp.Regexp{
	// NAME=value, --name=value and --name value, for names ending in KEY,
	// TOKEN, SECRET or PASSWORD (any case, so api_key= and --api-key too).
	regexp.MustCompile(`(?i)(\b[a-z0-9_]*(?:key|token|secret|password|passwd)=)("[^"]*"|'[^']*'|[^\s"'&,;]+)()`),
	regexp.MustCompile(`(?i)(--?[a-z0-9-]*(?:key|token|secret|password|passwd)\s+)([^\s-]\S*)()`),
	// "api_key": "value" in JSON.
	regexp.MustCompile(`(?i)("[a-z0-9_-]*(?:key|token|secret|password|passwd)"\s*:\s*")((?:[^"\\]|\\.)+)(")`),
	// Authorization: Bearer|Basic|token VALUE.
	regexp.MustCompile(`(?i)(\bbearer\s+)([a-z0-9._~+/=-]+)()`),
	regexp.MustCompile(`(?i)(\bauthorization:\s*(?:[a-z]+\s+)?)([^\s"',]+)()`),
	// Anthropic and OpenAI (sk-ant-..., sk-proj-..., sk-...).
	regexp.MustCompile(`()(\bsk-[A-Za-z0-9_-]{16,})()`),
	// Slack bot, user and app tokens.
	regexp.MustCompile(`()(\bxox[abposr]-[A-Za-z0-9-]{8,}|\bxapp-[A-Za-z0-9-]{8,})()`),
	// Telegram bot tokens: 123456789:AA...
	regexp.MustCompile(`()([0-9]{5,}:AA[A-Za-z0-9_-]{20,})()`),
	// GitHub tokens.
	regexp.MustCompile(`()(\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,})()`),
	// AWS access key ids and Google API keys.
	regexp.MustCompile(`()(\bAKIA[0-9A-Z]{16}\b|\bAIza[0-9A-Za-z_-]{35})()`),
}

// longRun is a candidate for a key of no known shape: a long run of
// base64 (or hex) characters. looksRandom decides.
var longRun = regexp.MustCompile(`[A-Za-z0-9+/]{32,}={0,2}`)

// redact returns s with anything shaped like a key or token replaced by
// "[redacted]": the known shapes above, and long runs of base64 or hex that
// look random rather than like words, paths or identifiers (a UUID, a
// path or a CamelCaseName stays). It is for text that reaches the chat,
// such as a failed CLI's stderr; it cannot know every secret, so it errs
// on the side of hiding random-looking text.
func redact(s string) string {
	for _, re := range secretShapes {
		s = re.ReplaceAllString(s, "${1}"+redacted+"${3}")
	}
	return longRun.ReplaceAllStringFunc(s, func(run string) string {
		if looksRandom(strings.TrimRight(run, "=")) {
			return redacted
		}
		return run
	})
}

// looksRandom reports whether run (letters, digits, '+' and '/') looks like
// a random key: hex with both digits and letters, or text whose "words"
// are short, as in random base64 (under 2.5 characters on average; 3.5 at
// most in a sample of 40,000 keys), where words, paths and CamelCase names
// have longer ones (4.2 and up). A word is a run of digits, of lowercase
// letters, or of uppercase letters with the lowercase ones after them,
// split CamelCase-wise ("HTTPServer" is "HTTP" and "Server").
func looksRandom(run string) bool {
	if isHex(run) {
		return strings.ContainsAny(run, "0123456789") && strings.ContainsFunc(run, unicode.IsLetter)
	}
	letters, words := 0, 0
	prev := ' '
	for i := 0; i < len(run); i++ {
		class := charClass(run[i])
		if class == ' ' {
			prev = ' '
			continue
		}
		letters++
		next := ' '
		if i+1 < len(run) {
			next = charClass(run[i+1])
		}
		switch {
		case class != prev && !(class == 'a' && prev == 'A'):
			words++ // a change of class, except lowercase after uppercase
		case class == 'A' && prev == 'A' && next == 'a':
			words++ // the S of HTTPServer
		}
		prev = class
	}
	return words > 0 && 4*letters < 15*words // average word under 3.75 characters
}

// charClass is 'a' for lowercase, 'A' for uppercase, '0' for digits and ' '
// for anything else.
func charClass(r byte) rune {
	switch {
	case r >= 'a' && r <= 'z':
		return 'a'
	case r >= 'A' && r <= 'Z':
		return 'A'
	case r >= '0' && r <= '9':
		return '0'
	}
	return ' '
}

func isHex(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return false
		}
	}
	return true
}
