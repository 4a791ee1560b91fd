// Package cluster is what golem replicas share beyond the store: who each
// one is, which one leads a role that only one may play at a time (the
// Telegram poller, the Discord gateway, the schedule loop), and which one
// owns a conversation.
//
// One golem alone is a Local replica: it leads every role and owns every
// conversation. Replicas sharing an etcd are each an Etcd: a lease of
// replica_ttl that every leadership and ownership hangs on, so that when a
// replica dies (or is cut off from etcd) its roles and conversations pass
// to the others within replica_ttl, and the replica itself stops what it
// ran before they can (see Etcd's doc).
package cluster

import (
	"context"
	"os"
)

// Replica is one golem process among those sharing a store.
type Replica interface {
	// Name is the replica's name in logs, /status and metrics.
	Name() string
	// Lead runs fn while this replica leads role, and again each time it
	// leads it anew, until ctx is done. fn's context ends when the
	// leadership does (another replica may lead role from then on), and fn
	// must return soon after. Lead returns once ctx is done and fn has
	// returned.
	Lead(ctx context.Context, role string, fn func(ctx context.Context))
	// Serve runs fn while this replica is in the cluster, and again each
	// time it rejoins, until ctx is done: what every replica does, but only
	// while it can reach the store (Slack's Socket Mode connection, which
	// Slack should not send events to while they cannot be kept). fn's
	// context ends when the membership does. Serve returns once ctx is
	// done and fn has returned.
	Serve(ctx context.Context, fn func(ctx context.Context))
	// Leading reports whether this replica leads role now, for metrics.
	Leading(role string) bool
	// Gone names the other replicas that joined once and are not in the
	// cluster now, so that what they kept for later is handed on.
	Gone(ctx context.Context) ([]string, error)
}

// Local is the replica of a golem that runs alone: it leads every role at
// once, for as long as asked.
type Local struct {
	name string
}

// NewLocal returns the lone replica named name ("" = the host name).
func NewLocal(name string) *Local { return &Local{name: nameOr(name)} }

func (l *Local) Name() string { return l.name }

// Lead runs fn once, then waits for ctx.
func (l *Local) Lead(ctx context.Context, _ string, fn func(ctx context.Context)) {
	fn(ctx)
	<-ctx.Done()
}

// Serve runs fn once, then waits for ctx.
func (l *Local) Serve(ctx context.Context, fn func(ctx context.Context)) { l.Lead(ctx, "", fn) }

func (l *Local) Leading(string) bool { return true }

// Gone is empty: there is no other replica.
func (l *Local) Gone(context.Context) ([]string, error) { return nil, nil }

// nameOr is name, or the host name when name is empty.
func nameOr(name string) string {
	if name != "" {
		return name
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "golem"
	}
	return host
}
