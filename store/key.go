package store

import (
	"errors"
	"fmt"
	"strings"
)

// Key identifies a conversation: platform:workspace:channel, plus :sub (a
// thread or user id) when the session scope says so. core keys its
// conversations by it and every store call takes it; its String form is
// what the store keeps on disk.
type Key struct {
	Platform  string
	Workspace string
	Channel   string
	Sub       string // thread id or user id, per scope; empty for channel scope
}

// NewKey returns the key of a conversation.
func NewKey(platform, workspace, channel, sub string) Key {
	return Key{Platform: platform, Workspace: workspace, Channel: channel, Sub: sub}
}

// IsZero reports whether k names no conversation.
func (k Key) IsZero() bool { return k == Key{} }

// String is the stored form, "platform:workspace:channel[:sub]". Colons and
// percent signs inside parts are escaped (%3A, %25) so the form stays
// unambiguous; ParseKey reads it back.
func (k Key) String() string {
	var b strings.Builder
	b.WriteString(keyEscaper.Replace(k.Platform))
	b.WriteByte(':')
	b.WriteString(keyEscaper.Replace(k.Workspace))
	b.WriteByte(':')
	b.WriteString(keyEscaper.Replace(k.Channel))
	if k.Sub != "" {
		b.WriteByte(':')
		b.WriteString(keyEscaper.Replace(k.Sub))
	}
	return b.String()
}

var (
	keyEscaper   = strings.NewReplacer(`%`, `%25`, `:`, `%3A`)
	keyUnescaper = strings.NewReplacer(`%25`, `%`, `%3A`, `:`)
)

// ErrBadKey is wrapped by ParseKey's error for a string that is not a
// Key's String form.
var ErrBadKey = errors.New("store: not a conversation key")

// ParseKey reads a Key's String form back.
func ParseKey(s string) (Key, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 && len(parts) != 4 {
		return Key{}, fmt.Errorf("%w: %q has %d parts, want 3 or 4", ErrBadKey, s, len(parts))
	}
	for i, p := range parts {
		u := keyUnescaper.Replace(p)
		if keyEscaper.Replace(u) != p {
			return Key{}, fmt.Errorf("%w: part %d of %q is not escaped", ErrBadKey, i+1, s)
		}
		parts[i] = u
	}
	k := Key{Platform: parts[0], Workspace: parts[1], Channel: parts[2]}
	if len(parts) == 4 {
		if parts[3] == "" {
			return Key{}, fmt.Errorf("%w: %q ends in an empty part", ErrBadKey, s)
		}
		k.Sub = parts[3]
	}
	return k, nil
}

// MarshalText is String, so that a Key reads as its stored form in JSON
// records and in logs; the zero Key is empty.
func (k Key) MarshalText() ([]byte, error) {
	if k.IsZero() {
		return nil, nil
	}
	return []byte(k.String()), nil
}

// UnmarshalText is ParseKey; an empty text is the zero Key.
func (k *Key) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*k = Key{}
		return nil
	}
	parsed, err := ParseKey(string(b))
	if err != nil {
		return err
	}
	*k = parsed
	return nil
}
