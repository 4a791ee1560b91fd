package core

import (
	"fmt"
	"strings"
)

// Scope says what one agent session belongs to.
type Scope string

const (
	ScopeChannel Scope = "channel" // everyone in a channel shares one session
	ScopeThread  Scope = "thread"  // each thread (or forum topic) is its own session
	ScopeUser    Scope = "user"    // each user in a channel has their own session
)

// ParseScope validates a scope's name.
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case ScopeChannel, ScopeThread, ScopeUser:
		return Scope(s), nil
	}
	return "", fmt.Errorf("%q is not channel, thread or user", s)
}

// Key identifies a conversation: platform:workspace:channel, plus
// :thread or :user when the scope says so. The store keys sessions by it.
type Key struct {
	Platform  string
	Workspace string
	Channel   string
	Sub       string // thread id or user id, per scope; empty for channel scope
}

// KeyFor returns the conversation m belongs to under scope. A message
// outside any thread under ScopeThread is keyed by its own id, since an
// answer to it starts that thread.
func KeyFor(m Message, scope Scope) Key {
	k := Key{Platform: m.Platform, Workspace: m.Workspace, Channel: m.Channel}
	switch scope {
	case ScopeThread:
		k.Sub = m.Thread
		if k.Sub == "" {
			k.Sub = m.ID
		}
	case ScopeUser:
		k.Sub = m.User
	}
	return k
}

// String is the stored form, "platform:workspace:channel[:sub]". Colons
// inside parts are escaped so the form stays unambiguous.
func (k Key) String() string {
	var b strings.Builder
	b.WriteString(esc(k.Platform))
	b.WriteByte(':')
	b.WriteString(esc(k.Workspace))
	b.WriteByte(':')
	b.WriteString(esc(k.Channel))
	if k.Sub != "" {
		b.WriteByte(':')
		b.WriteString(esc(k.Sub))
	}
	return b.String()
}

var keyEscaper = strings.NewReplacer(`%`, `%25`, `:`, `%3A`)

func esc(s string) string { return keyEscaper.Replace(s) }
