package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golem-chat/golem/internal/retry"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// MinTTL is the shortest replica_ttl: etcd refuses shorter leases.
const MinTTL = 2 * time.Second

// Etcd is a replica among those sharing an etcd. Its membership is a lease
// of TTL that the etcd client renews every TTL/3; every leadership (Lead)
// and every conversation it owns hangs on it, so etcd hands them to other
// replicas once the lease expires.
//
// The etcd client only learns that a lease is gone when etcd says so,
// which a replica cut off from etcd never hears. So Etcd keeps a deadline
// of its own: when no renewal has been answered for Grace (4/5 of TTL), the
// membership is lost at once: its Alive context ends, which stops what
// hangs on it (the agents of its turns among them) before etcd can give
// any of it to another replica. It then stops renewing the old lease
// (which expires on its own) and joins again under a new one, retrying
// until Close.
type Etcd struct {
	cli    *clientv3.Client
	prefix string // with its trailing "/"
	name   string
	ttl    time.Duration
	log    *slog.Logger

	ctx    context.Context // ends with Close
	cancel context.CancelFunc
	done   chan struct{} // closed when keep has returned

	mu      sync.Mutex
	cur     *membership      // nil while joining again
	last    clientv3.LeaseID // the lease of the latest membership, lost or not
	changed chan struct{}    // closed and replaced whenever cur changes
	leading map[string]bool
}

// membership is one lease of the replica's and what hangs on it.
type membership struct {
	sess  *concurrency.Session
	alive context.Context // ends when the lease is lost
	lose  context.CancelCauseFunc
	// renewals has the time of every renewal etcd answered.
	renewals <-chan *clientv3.LeaseKeepAliveResponse
	stopKeep context.CancelFunc
}

// ErrLost is the cause of a membership's end when its lease was not
// renewed in time.
var ErrLost = errors.New("cluster: lease not renewed in time; this replica's leaderships and conversations are given up")

// EtcdOptions configure an Etcd replica.
type EtcdOptions struct {
	Client *clientv3.Client
	Prefix string // the store's key prefix; the replica's keys go under PREFIX/cluster/
	Name   string // "" = the host name
	TTL    time.Duration
	Logger *slog.Logger
}

// JoinEtcd makes this process a replica: it takes its first lease, or
// fails when etcd does not grant one before ctx ends, and keeps it (or the
// next) until Close.
func JoinEtcd(ctx context.Context, o EtcdOptions) (*Etcd, error) {
	if o.TTL < MinTTL {
		return nil, fmt.Errorf("replica_ttl: %v is under the least, %v", o.TTL, MinTTL)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	life, cancel := context.WithCancel(context.Background())
	e := &Etcd{cli: o.Client, prefix: o.Prefix + "/cluster/", name: nameOr(o.Name), ttl: o.TTL,
		log: o.Logger.With("replica", nameOr(o.Name)), ctx: life, cancel: cancel, done: make(chan struct{}),
		changed: make(chan struct{}), leading: map[string]bool{}}
	m, err := e.join(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("replica: join the cluster: %w", err)
	}
	e.set(m)
	go e.keep(m)
	return e, nil
}

func (e *Etcd) Name() string { return e.name }

// TTL is the replica_ttl: how long a silent replica counts as alive.
func (e *Etcd) TTL() time.Duration { return e.ttl }

// Grace is how long after its last answered renewal a membership is given
// up.
func (e *Etcd) Grace() time.Duration { return e.ttl * 4 / 5 }

// Client is the etcd client the replica uses.
func (e *Etcd) Client() *clientv3.Client { return e.cli }

// Prefix is where the replica's keys go, with its trailing "/".
func (e *Etcd) Prefix() string { return e.prefix }

// join takes a new lease.
func (e *Etcd) join(ctx context.Context) (*membership, error) {
	secs := int64(math.Ceil(e.ttl.Seconds()))
	lease, err := e.cli.Grant(ctx, secs)
	if err != nil {
		return nil, err
	}
	keepCtx, stopKeep := context.WithCancel(e.ctx)
	renewals, err := e.cli.KeepAlive(keepCtx, lease.ID)
	if err != nil {
		stopKeep()
		return nil, err
	}
	sess, err := concurrency.NewSession(e.cli, concurrency.WithLease(lease.ID), concurrency.WithContext(keepCtx))
	if err != nil {
		stopKeep()
		return nil, err
	}
	// Its name stays (see Gone); its member key lives with the lease.
	if _, err := e.cli.Txn(ctx).Then(clientv3.OpPut(e.prefix+"names/"+url.PathEscape(e.name), ""),
		clientv3.OpPut(e.memberKey(), fmt.Sprintf("%x", lease.ID), clientv3.WithLease(lease.ID))).Commit(); err != nil {
		stopKeep()
		return nil, err
	}
	alive, lose := context.WithCancelCause(e.ctx)
	e.log.Info("replica joined", "lease", fmt.Sprintf("%x", lease.ID), "ttl", e.ttl)
	return &membership{sess: sess, alive: alive, lose: lose, renewals: renewals, stopKeep: stopKeep}, nil
}

// keep watches m's renewals, gives m up when they stop, and joins again,
// until Close.
func (e *Etcd) keep(m *membership) {
	defer close(e.done)
	back := retry.Backoff{First: 200 * time.Millisecond, Max: 5 * time.Second, Log: e.log, Method: "join"}
	for {
		e.hold(m)
		e.set(nil)
		m.lose(ErrLost)
		m.stopKeep() // the old lease expires on its own: nothing renews it now
		if e.ctx.Err() != nil {
			return
		}
		e.log.Warn("replica lost its lease; joining again", "grace", e.Grace())
		for {
			ctx, cancel := context.WithTimeout(e.ctx, e.ttl)
			next, err := e.join(ctx)
			cancel()
			if err == nil {
				m = next
				back.Reset()
				e.set(m)
				break
			}
			if back.Wait(e.ctx, "replica could not join the cluster", "etcd", err) != nil {
				return
			}
		}
	}
}

// hold returns once m's lease has gone Grace without an answered renewal,
// etcd said it is gone, or Close.
func (e *Etcd) hold(m *membership) {
	deadline := time.NewTimer(e.Grace())
	defer deadline.Stop()
	for {
		select {
		case r, ok := <-m.renewals:
			if !ok || r == nil {
				return // the lease is gone, or Close
			}
			deadline.Reset(e.Grace())
		case <-deadline.C:
			return
		case <-e.ctx.Done():
			return
		}
	}
}

func (e *Etcd) set(m *membership) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cur = m
	if m != nil {
		e.last = m.sess.Lease()
	}
	close(e.changed)
	e.changed = make(chan struct{})
}

// Member waits for a live membership and returns its session and the
// context that ends when it is lost; an error once ctx ends or Close.
func (e *Etcd) Member(ctx context.Context) (*concurrency.Session, context.Context, error) {
	for {
		e.mu.Lock()
		m, changed := e.cur, e.changed
		e.mu.Unlock()
		if m != nil && m.alive.Err() == nil {
			return m.sess, m.alive, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-e.ctx.Done():
			return nil, nil, errors.New("cluster: replica closed")
		}
	}
}

// Lease is the lease of the replica's latest membership, lost or not
// (never 0 once joined): the fence of the writes it makes.
func (e *Etcd) Lease() clientv3.LeaseID {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.last
}

// Live reports whether the replica holds a membership now: it may start
// turns. /healthz answers 503 while it does not.
func (e *Etcd) Live() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cur != nil && e.cur.alive.Err() == nil
}

// Lead campaigns for role under the current membership and runs fn while
// elected; when the membership is lost, fn's context ends and Lead
// campaigns again under the next one.
func (e *Etcd) Lead(ctx context.Context, role string, fn func(ctx context.Context)) {
	back := retry.Backoff{First: 200 * time.Millisecond, Max: 5 * time.Second, Log: e.log, Method: "campaign " + role}
	for ctx.Err() == nil {
		sess, alive, err := e.Member(ctx)
		if err != nil {
			return
		}
		run, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(alive, cancel)
		el := concurrency.NewElection(sess, e.prefix+"leader/"+role+"/")
		if err := el.Campaign(run, e.name); err != nil {
			stop()
			cancel()
			if ctx.Err() == nil && alive.Err() == nil {
				_ = back.Wait(ctx, "campaign failed", "etcd", err)
			}
			continue
		}
		back.Reset()
		e.lead(role, true)
		e.log.Info("replica leads", "role", role)
		fn(run)
		e.lead(role, false)
		e.log.Info("replica no longer leads", "role", role)
		stop()
		cancel()
		if alive.Err() == nil { // let another replica lead at once
			rctx, rcancel := context.WithTimeout(e.ctx, 2*time.Second)
			_ = el.Resign(rctx)
			rcancel()
		}
	}
}

// memberKey lives with the replica's current lease: its membership.
func (e *Etcd) memberKey() string { return e.prefix + "member/" + url.PathEscape(e.name) }

// Gone names the replicas that joined once under this prefix and are not
// members now: dead, stopped, or cut off from etcd. What they kept for
// later (their journals) is for the others to hand on.
func (e *Etcd) Gone(ctx context.Context) ([]string, error) {
	resp, err := e.cli.Txn(ctx).Then(clientv3.OpGet(e.prefix+"names/", clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(e.prefix+"member/", clientv3.WithPrefix(), clientv3.WithKeysOnly())).Commit()
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		live[strings.TrimPrefix(string(kv.Key), e.prefix+"member/")] = true
	}
	var gone []string
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		esc := strings.TrimPrefix(string(kv.Key), e.prefix+"names/")
		if name, err := url.PathUnescape(esc); err == nil && !live[esc] && name != e.name {
			gone = append(gone, name)
		}
	}
	return gone, nil
}

// Serve runs fn under each membership in turn.
func (e *Etcd) Serve(ctx context.Context, fn func(ctx context.Context)) {
	for ctx.Err() == nil {
		_, alive, err := e.Member(ctx)
		if err != nil {
			return
		}
		run, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(alive, cancel)
		fn(run)
		stop()
		cancel()
		if alive.Err() == nil && ctx.Err() == nil {
			// fn returned on its own: not again under this membership.
			select {
			case <-alive.Done():
			case <-ctx.Done():
			}
		}
	}
}

func (e *Etcd) lead(role string, on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leading[role] = on
}

func (e *Etcd) Leading(role string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading[role]
}

// Close gives the membership up: its lease is revoked, so that other
// replicas take over at once rather than after TTL. Stop what hangs on it
// first (core's Close), which Close does not wait for.
func (e *Etcd) Close() error {
	e.mu.Lock()
	m := e.cur
	e.mu.Unlock()
	var err error
	if m != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = e.cli.Revoke(ctx, m.sess.Lease())
		cancel()
	}
	e.cancel()
	<-e.done
	return err
}
