package core

import (
	"fmt"

	"github.com/golem-chat/golem/store"
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

// KeyFor returns the conversation m belongs to under scope. A message
// outside any thread under ScopeThread is keyed by its own id, since an
// answer to it starts that thread.
func KeyFor(m Message, scope Scope) store.Key {
	var sub string
	switch scope {
	case ScopeThread:
		sub = m.Thread
		if sub == "" {
			sub = m.ID
		}
	case ScopeUser:
		sub = m.User
	}
	return store.NewKey(m.Platform, m.Workspace, m.Channel, sub)
}
