package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/store"
	"google.golang.org/grpc"
)

// touching records the etcd calls whose request names a key with the
// given part.
type touching struct {
	part string
	mu   sync.Mutex
	hits []string
}

func (r *touching) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if s := fmt.Sprint(req); strings.Contains(s, r.part) {
		r.mu.Lock()
		r.hits = append(r.hits, method[strings.LastIndexByte(method, '/')+1:]+" "+s)
		r.mu.Unlock()
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (r *touching) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.hits...)
}

// A conversation its replica lets go of, with no mail waiting, costs the
// other replicas no round trip: its owner key went with its dirty key in
// one transaction, which says there is nothing to adopt.
func TestALetGoCostsTheOtherReplicasNothing(t *testing.T) {
	f := newFleet(t)
	a := f.start("a", 5*time.Second)
	seen := &touching{part: "rec::C1"}
	b := f.startWith("b", 5*time.Second, grpc.WithChainUnaryInterceptor(seen.intercept))
	// b owns C2 for a while: mail for it, put after C1's let-go, comes to
	// b by the same watch, after the let-go.
	b.d.Handle(context.Background(), msg("C2", 0, "!sleep 500ms\nlong"))
	f.waitRuns(1)
	a.d.Handle(context.Background(), msg("C1", 0, "short"))
	f.chat.waitFor(t, 10*time.Second, "C1's answer", func(texts []string) bool { return count(texts, "echo: short") == 1 })
	key := store.Key{Platform: "rec", Channel: "C1"}
	for deadline := time.Now().Add(10 * time.Second); a.conv.Owner(key) != ""; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("C1 was never let go of")
		}
	}
	a.d.Handle(context.Background(), msg("C2", 1, "after"))
	f.chat.waitFor(t, 10*time.Second, "the answer of the mail b took after the let-go", func(texts []string) bool { return count(texts, "echo: after") == 1 })
	if calls := seen.calls(); len(calls) > 0 {
		t.Fatalf("replica b made %d etcd calls about C1, which a let go of with nothing left:\n%s", len(calls), strings.Join(calls, "\n"))
	}
}
