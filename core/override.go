package core

import "github.com/golem-chat/golem/engine"

// Override changes a conversation's engine, model or working directory;
// empty fields keep the dispatcher's defaults. A conversation's own
// /engine and /model choices win over it.
type Override struct {
	Engine  string // an engine's config name, one of Options.Engines
	Model   string
	Workdir string // absolute
	// Permissions is the conversation's permissions mode; "" keeps
	// Options.Permissions.Mode.
	Permissions engine.Mode
}
