package cluster_test

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/clustertest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// rpcs counts the etcd client's unary calls (its round trips) by method;
// the watch and the lease's keep-alive are streams and do not count.
type rpcs struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *rpcs) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	r.mu.Lock()
	r.n[method[strings.LastIndexByte(method, '/')+1:]]++
	r.mu.Unlock()
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (r *rpcs) take() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.n
	r.n = map[string]int{}
	return out
}

// BenchmarkRoundTripsPerTurn counts the etcd round trips of one turn of
// a platform message on a replica, from Handle until the conversation is
// let go of: the mailbox (with the dedupe), the session, the budget, the
// turn's records, the usage, striking the mail and letting go (etcd-calls
// per turn, median).
func BenchmarkRoundTripsPerTurn(b *testing.B) {
	f := newFleet(b)
	calls := &rpcs{n: map[string]int{}}
	r := f.startWith("a", 10*time.Second, grpc.WithChainUnaryInterceptor(calls.intercept)) // no sweep meanwhile
	ctx := context.Background()
	key := core.KeyFor(msg("C1", 0, ""), "")
	owner := "golem/cluster/owner/" + url.PathEscape(key.String())
	watcher := clustertest.Client(b, f.etcd.Endpoints[0]) // not counted
	var totals []int
	var last map[string]int
	i := 0
	for b.Loop() {
		calls.take()
		text := fmt.Sprintf("turn %d", i)
		r.d.Handle(ctx, msg("C1", i, text))
		f.chat.waitFor(b, 10*time.Second, text, func(texts []string) bool { return count(texts, "echo: "+text) == 1 })
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if resp, err := watcher.Get(ctx, owner, clientv3.WithCountOnly()); err == nil && resp.Count == 0 {
				break // let go of: after the turn's last writes (its usage, its end)
			}
		}
		last = calls.take()
		n := 0
		for _, v := range last {
			n += v
		}
		totals = append(totals, n)
		i++
	}
	slices.Sort(totals)
	b.ReportMetric(float64(totals[len(totals)/2]), "etcd-calls/turn")
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(last)) {
		parts = append(parts, fmt.Sprintf("%s %d", m, last[m]))
	}
	b.Logf("one turn's etcd calls: %s", strings.Join(parts, ", "))
}
