package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/store"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Conversations is core.Cluster over an Etcd replica. Its keys, under the
// replica prefix (PREFIX/cluster/):
//
//	owner/KEY       the replica that runs the conversation, on its lease
//	dirty/KEY       set while a replica owns KEY, removed as it lets go: left
//	                behind, it says the owner died with turns perhaps in flight
//	mail/KEY/ID     a message for the conversation, JSON, until taken
//	click/ID        a click no replica's own turn knew, for the others (leased);
//	                also the operator's /stop or /new of a conversation owned
//	                elsewhere, for its owner (core.Host.Act tells which)
//	answer/ID       the answer of the replica whose turn waited for the click
//
// KEY is the conversation key's String, path-escaped, so that no key is a
// prefix of another's mail.
//
// A message is put in its conversation's mail in the same transaction that
// claims the conversation when no replica owns it, so it is durable before
// the platform is told, and one round trip. The owner takes mail through a
// watch, and strikes each message as its turn begins. When the owner's
// lease expires, the others see its owner key go, and one claims it: it
// tells the turns left in flight they were interrupted (dirty/ says there
// may be some) and runs the mail that waited.
type Conversations struct {
	r      *Etcd
	cli    *clientv3.Client
	prefix string // the replica prefix, PREFIX/cluster/
	log    *slog.Logger
	seen   Seen   // set before Bind (SetSeen); nil: core dedupes
	primer Primer // set before Bind (SetPrimer); nil: claims read no record

	mu     sync.Mutex
	host   core.Host
	keys   map[store.Key]*owned
	closed bool // Close has begun: Release starts nothing more
	// unstruck are the mail keys Taken failed to delete, for Release to
	// strike: mail delivered and not taken (core, shutting down, dropped
	// it) is left to the next owner.
	unstruck map[string]bool

	ctx    context.Context
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// owned is what the replica knows of one conversation key. Its mu is the
// key's lock: everything that enters the conversation here, and letting
// it go, hold it.
type owned struct {
	mu    sync.Mutex
	lease clientv3.LeaseID // the lease it is owned on here; 0 when not owned
	// delivered are the mail ids handed to core and not yet taken.
	delivered map[string]bool
}

var _ core.Cluster = (*Conversations)(nil)

// NewConversations shares conversations through r. Bind the Dispatcher
// before messages come.
func NewConversations(r *Etcd, log *slog.Logger) *Conversations {
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Conversations{r: r, cli: r.Client(), prefix: r.Prefix(), log: log.With("replica", r.Name()),
		keys: map[store.Key]*owned{}, unstruck: map[string]bool{}, ctx: ctx, cancel: cancel}
}

// Bind gives the conversations their host and starts watching: mail for
// the conversations owned here, owners that go, clicks, and the losses of
// this replica's membership. It also claims at once the conversations left
// without an owner.
func (c *Conversations) Bind(h core.Host) {
	c.mu.Lock()
	c.host = h
	c.mu.Unlock()
	c.done.Add(3)
	go func() { defer c.done.Done(); c.watch() }()
	go func() { defer c.done.Done(); c.sweep() }()
	go func() { defer c.done.Done(); c.guard() }()
}

// Close stops watching. Close the Dispatcher first, and the replica after.
func (c *Conversations) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.done.Wait()
}

func (c *Conversations) Replica() string { return c.r.Name() }

func (c *Conversations) Live() bool { return c.r.Live() }

func (c *Conversations) esc(key store.Key) string { return url.PathEscape(key.String()) }
func (c *Conversations) ownerKey(key store.Key) string {
	return c.prefix + "owner/" + c.esc(key)
}
func (c *Conversations) dirtyKey(key store.Key) string { return c.prefix + "dirty/" + c.esc(key) }
func (c *Conversations) mailDir(key store.Key) string  { return c.prefix + "mail/" + c.esc(key) + "/" }

// state is key's record here, made when new.
func (c *Conversations) state(key store.Key) *owned {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.keys[key]
	if o == nil {
		o = &owned{delivered: map[string]bool{}}
		c.keys[key] = o
	}
	return o
}

// lock is key's record here, made when new, with its mu held: the one in
// the map, even when the record it first found was forgotten (let go of)
// while it waited for the lock, since a record out of the map is one the
// watch no longer delivers mail to.
func (c *Conversations) lock(key store.Key) *owned {
	for {
		o := c.state(key)
		o.mu.Lock()
		c.mu.Lock()
		current := c.keys[key] == o
		c.mu.Unlock()
		if current {
			return o
		}
		o.mu.Unlock()
	}
}

// Admit implements core.Cluster.
func (c *Conversations) Admit(ctx context.Context, key store.Key, m core.Message, enqueue func(core.Message)) error {
	sess, alive, err := c.member()
	if err != nil {
		return err
	}
	lease := sess.Lease()
	if m.Sink != nil {
		return c.admitStream(ctx, key, lease, m, enqueue)
	}
	// A platform's receive loop waits for this: not past the membership,
	// nor past replica_ttl while etcd is slow to answer.
	ctx, cancel := context.WithTimeout(ctx, c.r.TTL())
	defer cancel()
	defer context.AfterFunc(alive, cancel)()
	id := mailID()
	m = core.SetMail(m, id)
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("cluster: encode message: %w", err)
	}
	if len(raw) > store.MaxValue {
		return fmt.Errorf("cluster: message of %d bytes: %w", len(raw), store.ErrTooLarge)
	}
	o := c.lock(key)
	defer o.mu.Unlock()
	mail := clientv3.OpPut(c.mailDir(key)+id, string(raw))
	resp, err := c.commitOnce(ctx, core.Dedupe(m),
		[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(c.ownerKey(key)), "=", 0)},
		append([]clientv3.Op{clientv3.OpGet(c.dirtyKey(key)), clientv3.OpGet(c.mailDir(key), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend)),
			clientv3.OpPut(c.ownerKey(key), c.r.Name(), clientv3.WithLease(lease)), clientv3.OpPut(c.dirtyKey(key), c.r.Name()), mail}, c.recordRead(key)...),
		append([]clientv3.Op{clientv3.OpGet(c.ownerKey(key)), mail,
			clientv3.OpGet(c.mailDir(key), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))}, c.recordRead(key)...))
	if errors.Is(err, core.ErrDuplicate) {
		return err
	}
	if err != nil {
		if o.lease == 0 {
			c.forget(key, o) // a claim etcd committed all the same is the sweep's (reclaim)
		}
		if c.landed(alive, c.mailDir(key)+id) {
			// The answer was lost, not the write: the message is in the
			// mailbox and runs from there (its owner's watch, or the sweep);
			// telling the person to send it again would run it twice.
			c.log.Warn("the mailbox's answer was lost but the message is in it", "conversation", key, "err", err)
			return nil
		}
		return fmt.Errorf("cluster: put the message in its mailbox: %w", err)
	}
	if resp.Succeeded { // claimed: what a dead owner left comes first
		o.lease = lease
		c.prime(key, resp, 5)
		dirty := len(resp.Responses[0].GetResponseRange().Kvs) > 0
		c.takeOver(key, o, dirty, resp.Responses[1].GetResponseRange().Kvs)
	} else if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 0 || clientv3.LeaseID(kvs[0].Lease) != lease {
		if o.lease == 0 || len(kvs) == 0 || clientv3.LeaseID(kvs[0].Lease) != o.lease {
			c.forget(key, o) // not owned here: never, or let go of or lost meanwhile
		}
		return nil // its owner takes it from the mailbox
	} else {
		// Owned here: mail other replicas put before this one may not have
		// come by the watch yet, and goes first (the mailbox's order is
		// the conversation's).
		c.prime(key, resp, 3)
		var before []*mvccpb.KeyValue
		for _, kv := range resp.Responses[2].GetResponseRange().Kvs {
			if mailOf(kv.Key) != id {
				before = append(before, kv)
			}
		}
		c.deliver(key, o, before)
	}
	o.lease = lease
	o.delivered[id] = true
	enqueue(m)
	return nil
}

// landed reports whether mail, whose put's answer was lost, is in etcd;
// it asks for at most 2 s, and not past the membership alive.
func (c *Conversations) landed(alive context.Context, mail string) bool {
	ctx, cancel := context.WithTimeout(alive, 2*time.Second)
	defer cancel()
	resp, err := c.cli.Get(ctx, mail, clientv3.WithCountOnly())
	return err == nil && resp.Count > 0
}

// Seen is the store's dedupe of event ids, which Admit folds into its
// own transaction (etcdstore.Store is one).
type Seen interface {
	SeenOp(id string, ttl time.Duration) (absent clientv3.Cmp, put clientv3.Op, err error)
	DropSeenLease(ttl time.Duration)
	MarkSeen(id string, ttl time.Duration) (first bool, err error)
}

// SetSeen has Admit mark core.Dedupe(m) seen with s, before Bind.
func (c *Conversations) SetSeen(s Seen) { c.seen = s }

// Dedupes implements core.Cluster.
func (c *Conversations) Dedupes() bool { return c.seen != nil }

// Primer is the store's read of a conversation's record, which a claim
// makes in its own transaction for the turn that follows it, so that the
// turn's read makes no round trip (etcdstore.Store is one).
type Primer interface {
	ConversationOp(key store.Key) clientv3.Op
	Prime(key store.Key, rev int64, kvs []*mvccpb.KeyValue)
	Unprime(key store.Key)
}

// SetPrimer has the claims of conversations read their records with p,
// before Bind.
func (c *Conversations) SetPrimer(p Primer) { c.primer = p }

// recordRead is the read of key's record that a claim's transaction ends
// with: none without a Primer.
func (c *Conversations) recordRead(key store.Key) []clientv3.Op {
	if c.primer == nil {
		return nil
	}
	return []clientv3.Op{c.primer.ConversationOp(key)}
}

// prime hands the Primer what recordRead read, the i-th of resp's answers.
func (c *Conversations) prime(key store.Key, resp *clientv3.TxnResponse, i int) {
	if c.primer == nil || i >= len(resp.Responses) {
		return
	}
	c.primer.Prime(key, resp.Header.Revision, resp.Responses[i].GetResponseRange().Kvs)
}

// commitOnce commits the transaction of cmps, then and els; with a dedupe
// id, in the same round trip as the id's mark, unless it is there already
// (core.ErrDuplicate when it was seen, nothing written).
func (c *Conversations) commitOnce(ctx context.Context, dedupe string, cmps []clientv3.Cmp, then, els []clientv3.Op) (*clientv3.TxnResponse, error) {
	if dedupe != "" && c.seen != nil {
		absent, put, err := c.seen.SeenOp(dedupe, core.SeenTTL)
		if err == nil {
			resp, err := c.cli.Txn(ctx).If(absent).Then(put, clientv3.OpTxn(cmps, then, els)).Commit()
			switch {
			case err == nil && resp.Succeeded:
				inner := (*clientv3.TxnResponse)(resp.Responses[1].GetResponseTxn())
				inner.Header = resp.Header // the revision it committed at
				return inner, nil
			case errors.Is(err, rpctypes.ErrLeaseNotFound):
				c.seen.DropSeenLease(core.SeenTTL)
			case err != nil:
				return nil, err
			}
		}
		// The id is there (seen, or expired and not yet dropped), or its
		// lease was gone: MarkSeen tells which.
		first, err := c.seen.MarkSeen(dedupe, core.SeenTTL)
		if err != nil {
			return nil, err
		}
		if !first {
			return nil, core.ErrDuplicate
		}
	}
	return c.cli.Txn(ctx).If(cmps...).Then(then...).Else(els...).Commit()
}

// admitStream claims key for a message that cannot move (its answer
// streams to whoever asked this replica), waiting while another replica
// runs it. ctx bounds the wait, not a claim's round trip (bounded by the
// TTL): one that has ended still claims a free conversation, as a
// scheduled run that may not wait does.
func (c *Conversations) admitStream(ctx context.Context, key store.Key, lease clientv3.LeaseID, m core.Message, enqueue func(core.Message)) error {
	for {
		o := c.lock(key)
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.r.TTL())
		resp, err := c.cli.Txn(tctx).
			If(clientv3.Compare(clientv3.CreateRevision(c.ownerKey(key)), "=", 0)).
			Then(append([]clientv3.Op{clientv3.OpGet(c.dirtyKey(key)), clientv3.OpGet(c.mailDir(key), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend)),
				clientv3.OpPut(c.ownerKey(key), c.r.Name(), clientv3.WithLease(lease)), clientv3.OpPut(c.dirtyKey(key), c.r.Name())}, c.recordRead(key)...)...).
			Else(append([]clientv3.Op{clientv3.OpGet(c.ownerKey(key))}, c.recordRead(key)...)...).
			Commit()
		cancel()
		if err != nil {
			if o.lease == 0 {
				c.forget(key, o)
			}
			o.mu.Unlock()
			return fmt.Errorf("cluster: claim the conversation: %w", err)
		}
		mine := resp.Succeeded
		if mine {
			o.lease = lease
			c.prime(key, resp, 4)
			c.takeOver(key, o, len(resp.Responses[0].GetResponseRange().Kvs) > 0, resp.Responses[1].GetResponseRange().Kvs)
		} else if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 && clientv3.LeaseID(kvs[0].Lease) == lease {
			mine = true
			c.prime(key, resp, 1)
		}
		if mine {
			enqueue(m)
			o.mu.Unlock()
			return nil
		}
		if o.lease == 0 {
			c.forget(key, o)
		}
		o.mu.Unlock()
		// Another replica runs it: wait for its owner key to go.
		wctx, cancel := context.WithCancel(ctx)
		w := c.cli.Watch(wctx, c.ownerKey(key), clientv3.WithRev(resp.Header.Revision+1), clientv3.WithFilterPut())
		select {
		case <-w:
		case <-ctx.Done():
		}
		cancel()
		if ctx.Err() != nil {
			return fmt.Errorf("cluster: the conversation stayed busy on another replica: %w", ctx.Err())
		}
	}
}

// takeOver runs, with o.mu held, once this replica has claimed key: when a
// dead owner left it dirty, its turns in flight are told they were
// interrupted; then the mail that waited is delivered, oldest first.
func (c *Conversations) takeOver(key store.Key, o *owned, dirty bool, mail []*mvccpb.KeyValue) {
	h := c.hostOf()
	if dirty {
		c.log.Info("conversation taken over", "conversation", key)
		h.TakeOver(key)
	}
	c.deliver(key, o, mail)
}

// deliver hands core the mail it does not have yet, in order, and says
// how many. With o.mu held.
func (c *Conversations) deliver(key store.Key, o *owned, mail []*mvccpb.KeyValue) (n int) {
	h := c.hostOf()
	for _, kv := range mail {
		id := mailOf(kv.Key)
		if o.delivered[id] {
			continue
		}
		var m core.Message
		if err := json.Unmarshal(kv.Value, &m); err != nil {
			c.log.Error("unreadable mail dropped", "conversation", key, "mail", id, "err", err)
			c.remove(string(kv.Key))
			continue
		}
		o.delivered[id] = true
		h.Deliver(core.SetMail(m, id))
		n++
	}
	return n
}

func (c *Conversations) hostOf() core.Host {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.host
}

// Taken implements core.Cluster. The id stays among those delivered
// until the conversation is let go of, so that a watch event of its mail
// still on its way is not run again.
func (c *Conversations) Taken(key store.Key, m core.Message) {
	c.strike(c.mailDir(key) + core.Mail(m))
}

// strike deletes the mail key k of a message taken, noting a failure for
// Release to try again.
func (c *Conversations) strike(k string) {
	if !c.remove(k) {
		c.mu.Lock()
		c.unstruck[k] = true
		c.mu.Unlock()
	}
}

// remove deletes one key, logging a failure: mail left behind runs again
// only if the conversation changes hands, and dedupe does not know it.
func (c *Conversations) remove(k string) bool {
	ctx, cancel := context.WithTimeout(c.ctx, c.r.TTL())
	defer cancel()
	if _, err := c.cli.Delete(ctx, k); err != nil {
		c.log.Error("strike mail", "key", k, "err", err)
		return false
	}
	return true
}

// Release implements core.Cluster. It lets go on a goroutine of its own,
// so it may be called from within enqueue or Deliver. After Close (a
// turn's last exit, a retry's timer) it does nothing: the lease's end
// lets go.
func (c *Conversations) Release(key store.Key) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.done.Add(1) // under mu: never concurrent with Close's Wait
	c.mu.Unlock()
	go func() {
		defer c.done.Done()
		o := c.lock(key)
		defer o.mu.Unlock()
		if o.lease == 0 || !c.hostOf().Idle(key) {
			return
		}
		// From the let-go on, another replica may own and write the
		// conversation, even when its answer is lost and the record kept
		// here: what a claim read of it is no longer vouched for.
		if c.primer != nil {
			c.primer.Unprime(key)
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.r.TTL())
		defer cancel()
		resp, err := c.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.LeaseValue(c.ownerKey(key)), "=", o.lease),
				clientv3.Compare(clientv3.CreateRevision(c.mailDir(key)), "=", 0).WithPrefix()).
			Then(clientv3.OpDelete(c.ownerKey(key)), clientv3.OpDelete(c.dirtyKey(key))).
			Else(clientv3.OpGet(c.ownerKey(key)), clientv3.OpGet(c.mailDir(key), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))).
			Commit()
		if err != nil {
			c.log.Warn("let go of a conversation", "conversation", key, "err", err)
			return // kept: the next idle time tries again, or the lease ends
		}
		if resp.Succeeded {
			c.forget(key, o)
			return
		}
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 0 || clientv3.LeaseID(kvs[0].Lease) != o.lease {
			c.forget(key, o) // lost meanwhile
			return
		}
		mail := resp.Responses[1].GetResponseRange().Kvs
		for _, kv := range mail {
			k := string(kv.Key)
			c.mu.Lock()
			failed := c.unstruck[k]
			delete(c.unstruck, k)
			c.mu.Unlock()
			if failed { // taken, but striking it had failed
				c.strike(k)
			}
		}
		// Mail delivered and neither taken nor struck: core dropped it as
		// it shut down. It waits for the next owner, and the conversation
		// is kept until Close revokes the lease.
		if c.deliver(key, o, mail) == 0 { // only mail delivered already: try again
			time.AfterFunc(100*time.Millisecond, func() { c.Release(key) })
		}
	}()
}

// forget drops key's record: it is not owned here. With o.mu held.
func (c *Conversations) forget(key store.Key, o *owned) {
	o.lease = 0
	clear(o.delivered)
	if c.primer != nil {
		c.primer.Unprime(key)
	}
	c.mu.Lock()
	if c.keys[key] == o {
		delete(c.keys, key)
	}
	c.mu.Unlock()
}

// Fence is the fence of this replica's writes to key's records (see
// etcdstore.SetFence): its owner key, and this replica's latest lease,
// the one every conversation it owns is claimed on.
func (c *Conversations) Fence(key store.Key) (string, string, clientv3.LeaseID, bool) {
	return c.ownerKey(key), c.r.memberKey(), c.r.Lease(), true
}

// MailKey is the key of mail in key's mailbox (for
// etcdstore.SetMailbox, which strikes it as it records the turn).
func (c *Conversations) MailKey(key store.Key, mail string) string { return c.mailDir(key) + mail }

// Owner implements core.Cluster.
func (c *Conversations) Owner(key store.Key) string {
	ctx, cancel := context.WithTimeout(c.ctx, c.r.TTL())
	defer cancel()
	resp, err := c.cli.Get(ctx, c.ownerKey(key))
	if err != nil || len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

// Owned is how many conversations this replica owns now.
func (c *Conversations) Owned() int {
	c.mu.Lock()
	os := make([]*owned, 0, len(c.keys))
	for _, o := range c.keys {
		os = append(os, o)
	}
	c.mu.Unlock()
	n := 0
	for _, o := range os {
		o.mu.Lock()
		if o.lease != 0 {
			n++
		}
		o.mu.Unlock()
	}
	return n
}

// member is the current membership, or an error when the replica has none
// now: it takes no message then.
func (c *Conversations) member() (*sessionLease, context.Context, error) {
	ctx, cancel := context.WithTimeout(c.ctx, 50*time.Millisecond)
	defer cancel()
	sess, alive, err := c.r.Member(ctx)
	if err != nil {
		return nil, nil, errors.New("cluster: this replica is not in the cluster now (etcd out of reach)")
	}
	return &sessionLease{sess.Lease()}, alive, nil
}

type sessionLease struct{ id clientv3.LeaseID }

func (s *sessionLease) Lease() clientv3.LeaseID { return s.id }

// mailOf is the id in a mail key.
func mailOf(key []byte) string { return string(key[strings.LastIndexByte(string(key), '/')+1:]) }

func mailID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%016x-%s", time.Now().UnixNano(), hex.EncodeToString(b[:]))
}
