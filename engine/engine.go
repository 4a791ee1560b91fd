// Package engine runs agent CLIs (Claude Code's `claude`, Cursor's `agent`)
// as child processes and turns their stdout into normalized events.
//
// An engine knows its CLI's flags, environment, skill layout and resume
// behaviour; it knows nothing of chat platforms.
package engine

import (
	"context"

	"github.com/golem-chat/golem/parser"
)

// Turn is one prompt for an agent.
type Turn struct {
	Prompt    string
	SessionID string // resume this session; empty starts a new one
	Model     string // empty: the CLI's default
	Workdir   string // the agent's working directory; must exist
	APIKey    string // empty: the environment is inherited as it is
	Files     []string // absolute paths of files the user attached (already in Workdir's inbox)
}

// Engine starts runs of one agent CLI. Implementations are safe for
// concurrent use: each Run is its own process.
type Engine interface {
	// Name is the engine's config name: "claude-code" or "cursor".
	Name() string
	// Run starts the CLI for t. A returned error means nothing was started
	// (e.g. ErrNotInstalled); otherwise the Run's events end with exactly one
	// terminal event, whatever the process does. Cancelling ctx kills the
	// whole process group and ends the run with the error "stopped"; a
	// deadline on ctx ends it with "timed out".
	Run(ctx context.Context, t Turn) (*Run, error)
}

// Run is one agent invocation in progress. It is two-way: a later version
// delivers parser.PermissionRequest events and takes the answers through
// Respond; the channel design already allows a run to wait for the caller.
type Run struct {
	events  chan parser.Event
	answers chan PermissionAnswer
}

// PermissionAnswer answers a parser.PermissionRequest event by its ID.
type PermissionAnswer struct {
	ID    string
	Allow bool
}

// Events delivers the run's events in order. It is closed right after the
// single terminal event (parser.Done or parser.Error). The caller must
// drain it (or cancel the context) so the process is not blocked on output.
func (r *Run) Events() <-chan parser.Event { return r.events }

// Respond answers a permission request. Engines that never ask (all of them
// today) ignore answers; Respond never blocks past ctx.
func (r *Run) Respond(ctx context.Context, a PermissionAnswer) error {
	select {
	case r.answers <- a:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
