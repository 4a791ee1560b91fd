package core

import (
	"context"
	"log/slog"
	"time"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/store"
)

// Options configure a Dispatcher.
type Options struct {
	Engines       map[string]engine.Engine // by config name: "claude-code", "cursor"
	DefaultEngine string
	// EngineErrors holds, per engine name, why it cannot run (a missing
	// CLI): a turn for it answers with this text (the install hint).
	EngineErrors  map[string]error
	Models        map[string]string // default model per engine; "" = CLI default
	Store         *store.Store
	Workspace     string        // absolute; the agent's working directory
	Scope         Scope         // default ScopeChannel
	Allow         []string      // "platform:user" entries or "*"; console and http are always allowed
	Timeout       time.Duration // per turn; default 10m
	MaxConcurrent int           // turns running at once; default 8
	QueueDepth    int           // waiting messages per conversation; default 5
	Logger        *slog.Logger
}

// Dispatcher routes incoming messages to conversations: it checks access,
// answers chat commands, queues turns per conversation, runs them under the
// global limit and streams replies back through the adapter the message
// came from. It implements Handler.
type Dispatcher struct {
	opts Options
}

var _ Handler = (*Dispatcher)(nil)

// NewDispatcher validates opts and returns a dispatcher. Call Close to stop.
func NewDispatcher(opts Options) (*Dispatcher, error) { panic("todo") }

// Register makes adapter a the route for replies to messages of its
// platform. Call before a.Start.
func (d *Dispatcher) Register(a Adapter) { panic("todo") }

// Handle takes one incoming message; it never waits for a turn.
func (d *Dispatcher) Handle(ctx context.Context, m Message) { panic("todo") }

// Close stops taking messages, stops running turns (they end "stopped"
// after ctx's deadline, or at once if ctx is done) and waits for them.
func (d *Dispatcher) Close(ctx context.Context) error { panic("todo") }
