package core

import (
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/sandbox"
)

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
	// Sandbox overrides the sandbox for this conversation (its network,
	// mode, and more allow_hosts and writable paths).
	Sandbox sandbox.Config
}
