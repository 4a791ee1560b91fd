package core_test

import (
	"context"
	"sync"
	"testing"

	"github.com/golem-chat/golem/core"
)

// heldPoster is the recorder with its posts to one channel held until
// hold is closed (or the dispatcher gives up on the platform).
type heldPoster struct {
	*recorder
	channel string
	hold    chan struct{}
}

func (p *heldPoster) Send(ctx context.Context, to core.Place, text string) (core.MessageRef, error) {
	if to.Channel == p.channel {
		select {
		case <-p.hold:
		case <-ctx.Done():
			return core.MessageRef{}, ctx.Err()
		}
	}
	return p.recorder.Send(ctx, to, text)
}

// TestSlotFreedWhenTheAgentExits: with max_concurrent 1, a turn whose
// agent has exited gives its slot to another conversation's turn while its
// own answer is still being posted (the platform is slow), and both are
// answered.
func TestSlotFreedWhenTheAgentExits(t *testing.T) {
	h := newHarness(t, chatLimits, func(o *core.Options) { o.MaxConcurrent = 1 })
	h.stop()
	held := &heldPoster{recorder: h.rec, channel: "C1", hold: make(chan struct{})}
	h.startWith(held)
	release := sync.OnceFunc(func() { close(held.hold) })
	t.Cleanup(release)

	h.sayAs("C1", "alice", "first")
	h.sayAs("C2", "alice", "second")
	h.rec.waitText("echo: second") // C1's answer is still held
	release()
	h.rec.waitText("echo: first")
}
