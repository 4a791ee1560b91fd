package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
)

// freezing stands for a replica killed as it writes its first turn
// record: the first transaction that writes one is not sent, its etcd
// client is cut off, and the call never returns until the test ends.
type freezing struct {
	cut     func()
	once    sync.Once
	hit     chan struct{}
	release chan struct{}
}

func (z *freezing) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	frozen := false
	if strings.HasSuffix(method, "/Txn") && strings.Contains(fmt.Sprint(req), "golem/turns/") {
		z.once.Do(func() { frozen = true })
	}
	if !frozen {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	z.cut()
	close(z.hit)
	<-z.release
	return errors.New("replica killed")
}

// A replica killed once it has taken a message and before its turn is
// recorded loses nothing: the replica that takes the conversation over
// runs the message (its mail is struck in the write that records its
// turn, so either the mail or the record outlives the replica).
func TestAReplicaKilledAsItsTurnBeginsLosesNothing(t *testing.T) {
	f := newFleet(t)
	const ttl = 2 * time.Second
	z := &freezing{hit: make(chan struct{}), release: make(chan struct{})}
	a := f.startWith("a", ttl, grpc.WithChainUnaryInterceptor(z.intercept))
	t.Cleanup(func() { close(z.release) }) // before a is closed
	z.cut = a.proxy.Cut
	b := f.start("b", ttl)
	a.d.Handle(context.Background(), msg("C1", 0, "hello"))
	select {
	case <-z.hit:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn was never recorded")
	}
	f.chat.waitFor(t, ttl+10*time.Second, "the message answered by b, or marked interrupted", func(texts []string) bool {
		return count(texts, "echo: hello") == 1 || count(texts, "restarted while answering") == 1
	})
	t.Logf("b took over: %q", f.chat.texts())
	_ = b
}
