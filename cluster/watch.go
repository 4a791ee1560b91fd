package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/store"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// watch follows the replica prefix from now on: mail for the
// conversations owned here, owner keys that go (their replica let go or
// died), and clicks for the turns here.
func (c *Conversations) watch() {
	var rev int64
	for c.ctx.Err() == nil {
		opts := []clientv3.OpOption{clientv3.WithPrefix()}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev+1))
		}
		for resp := range c.cli.Watch(clientv3.WithRequireLeader(c.ctx), c.prefix, opts...) {
			if err := resp.Err(); err != nil {
				if resp.CompactRevision > 0 { // missed: the sweep finds what was left
					rev = 0
				}
				c.log.Warn("cluster watch ended; watching again", "err", err)
				break
			}
			let := letGo(c.prefix, resp.Events)
			for _, ev := range resp.Events {
				c.event(ev, let)
			}
			rev = resp.Header.Revision
		}
		select {
		case <-c.ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// letGo finds, among one watch answer's events, the conversations that
// were let go of (Release): their owner and dirty keys deleted at one
// revision, which Release does only while no mail waits. It maps each
// escaped key to that revision. Nothing is left to adopt of them: mail
// put after the let-go claims the conversation in its own transaction.
func letGo(prefix string, events []*clientv3.Event) map[string]int64 {
	var let map[string]int64
	for _, ev := range events {
		if ev.Type != mvccpb.DELETE {
			continue
		}
		if esc, ok := strings.CutPrefix(string(ev.Kv.Key), prefix+"dirty/"); ok {
			if let == nil {
				let = map[string]int64{}
			}
			let[esc] = ev.Kv.ModRevision
		}
	}
	return let
}

// event acts on one event of the watch; let is letGo of its answer's.
func (c *Conversations) event(ev *clientv3.Event, let map[string]int64) {
	rest := strings.TrimPrefix(string(ev.Kv.Key), c.prefix)
	kind, name, _ := strings.Cut(rest, "/")
	switch {
	case kind == "mail" && ev.Type == mvccpb.PUT:
		esc, _, _ := strings.Cut(name, "/")
		key, ok := parseEsc(esc)
		if !ok {
			return
		}
		c.mu.Lock()
		o := c.keys[key]
		c.mu.Unlock()
		if o == nil {
			return // not owned here
		}
		o.mu.Lock()
		if o.lease != 0 {
			c.deliver(key, o, []*mvccpb.KeyValue{ev.Kv})
		}
		o.mu.Unlock()
	case kind == "owner" && ev.Type == mvccpb.DELETE:
		if rev, ok := let[name]; ok && rev == ev.Kv.ModRevision {
			return // let go of, with nothing left behind
		}
		if key, ok := parseEsc(name); ok {
			c.done.Go(func() { c.adopt(key) })
		}
	case kind == "click" && ev.Type == mvccpb.PUT:
		kv := ev.Kv
		c.done.Go(func() { c.act(name, kv.Value) })
	}
}

func parseEsc(esc string) (store.Key, bool) {
	s, err := url.PathUnescape(esc)
	if err != nil {
		return store.Key{}, false
	}
	key, err := store.ParseKey(s)
	return key, err == nil
}

// adopt claims key when no replica owns it and it holds mail or was left
// dirty by an owner that died; the claim tells its interrupted turns and
// runs its mail. Of the replicas that try at once, one wins.
func (c *Conversations) adopt(key store.Key) {
	ctx, cancel := context.WithTimeout(c.ctx, c.r.TTL())
	defer cancel()
	peek, err := c.cli.Txn(ctx).Then(
		clientv3.OpGet(c.dirtyKey(key), clientv3.WithCountOnly()),
		clientv3.OpGet(c.mailDir(key), clientv3.WithPrefix(), clientv3.WithCountOnly()),
		clientv3.OpGet(c.ownerKey(key), clientv3.WithCountOnly())).Commit()
	if err != nil {
		c.log.Warn("look at a conversation without owner", "conversation", key, "err", err)
		return
	}
	r := peek.Responses
	if r[2].GetResponseRange().Count > 0 || r[0].GetResponseRange().Count+r[1].GetResponseRange().Count == 0 {
		return // owned, or nothing to do
	}
	sess, _, err := c.member()
	if err != nil {
		return
	}
	lease := sess.Lease()
	o := c.lock(key)
	defer o.mu.Unlock()
	if o.lease != 0 {
		return
	}
	resp, err := c.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(c.ownerKey(key)), "=", 0)).
		Then(clientv3.OpGet(c.dirtyKey(key)), clientv3.OpGet(c.mailDir(key), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend)),
			clientv3.OpPut(c.ownerKey(key), c.r.Name(), clientv3.WithLease(lease)), clientv3.OpPut(c.dirtyKey(key), c.r.Name())).
		Commit()
	if err != nil || !resp.Succeeded {
		c.forget(key, o)
		return // another replica was first
	}
	o.lease = lease
	c.takeOver(key, o, len(resp.Responses[0].GetResponseRange().Kvs) > 0, resp.Responses[1].GetResponseRange().Kvs)
	c.Release(key) // when there was only reaping to do, or once its mail is done
}

// sweep adopts, now and every TTL, the conversations left without owner
// that the watch did not bring (at start, after a watch gap), and takes
// back those etcd says this replica owns that it forgot (see reclaim).
func (c *Conversations) sweep() {
	for {
		c.sweepOnce()
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(c.r.TTL()):
		}
	}
}

func (c *Conversations) sweepOnce() {
	ctx, cancel := context.WithTimeout(c.ctx, c.r.TTL())
	defer cancel()
	resp, err := c.cli.Txn(ctx).Then(
		clientv3.OpGet(c.prefix+"owner/", clientv3.WithPrefix()), // not keys only: that drops their leases
		clientv3.OpGet(c.prefix+"dirty/", clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(c.prefix+"mail/", clientv3.WithPrefix(), clientv3.WithKeysOnly())).Commit()
	if err != nil {
		if c.ctx.Err() == nil {
			c.log.Warn("sweep for conversations without owner", "err", err)
		}
		return
	}
	owners := map[string]bool{}
	var lost []store.Key // owned here in etcd, unknown to this replica
	lease := c.r.Lease()
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		esc := strings.TrimPrefix(string(kv.Key), c.prefix+"owner/")
		owners[esc] = true
		if key, ok := parseEsc(esc); ok && clientv3.LeaseID(kv.Lease) == lease && c.r.Live() {
			c.mu.Lock()
			known := c.keys[key] != nil
			c.mu.Unlock()
			if !known {
				lost = append(lost, key)
			}
		}
	}
	for _, key := range lost {
		c.reclaim(key, lease)
	}
	orphans := map[string]bool{}
	for i, dir := range []string{"dirty/", "mail/"} {
		for _, kv := range resp.Responses[i+1].GetResponseRange().Kvs {
			esc, _, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), c.prefix+dir), "/")
			if !owners[esc] {
				orphans[esc] = true
			}
		}
	}
	for esc := range orphans {
		if key, ok := parseEsc(esc); ok {
			c.adopt(key)
		}
	}
}

// reclaim takes key back when etcd says this replica owns it on lease
// but its record here was forgotten: the claim's transaction committed
// while its answer was lost (a timeout), which left the conversation owned
// here with nothing here to run its mail or let it go.
func (c *Conversations) reclaim(key store.Key, lease clientv3.LeaseID) {
	o := c.lock(key)
	defer o.mu.Unlock()
	if o.lease != 0 {
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.r.TTL())
	defer cancel()
	resp, err := c.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.LeaseValue(c.ownerKey(key)), "=", lease)).
		Then(clientv3.OpGet(c.dirtyKey(key)), clientv3.OpGet(c.mailDir(key), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))).
		Commit()
	if err != nil || !resp.Succeeded {
		c.forget(key, o)
		return // let go of, or lost, meanwhile
	}
	c.log.Warn("conversation owned here without its record (a claim's answer was lost); taken back", "conversation", key)
	o.lease = lease
	c.takeOver(key, o, len(resp.Responses[0].GetResponseRange().Kvs) > 0, resp.Responses[1].GetResponseRange().Kvs)
	c.Release(key)
}

// guard gives every conversation up when the replica loses its
// membership: core stops their turns before the lease can expire.
func (c *Conversations) guard() {
	for {
		_, alive, err := c.r.Member(c.ctx)
		if err != nil {
			return
		}
		select {
		case <-alive.Done():
		case <-c.ctx.Done():
			return
		}
		c.mu.Lock()
		os := make(map[store.Key]*owned, len(c.keys))
		for k, o := range c.keys {
			os[k] = o
		}
		c.mu.Unlock()
		for k, o := range os {
			o.mu.Lock()
			c.forget(k, o)
			o.mu.Unlock()
		}
		c.log.Warn("replica lost its membership: its turns are stopped, its conversations left to the others", "conversations", len(os))
		c.hostOf().GiveUp()
	}
}

// clickResult is an ActionResult on its way between replicas.
type clickResult struct {
	Settled, Refusal string
	Err              string `json:",omitempty"` // unknown, decided, approver, or another error's text
}

var clickErrors = map[string]error{"unknown": core.ErrUnknownRequest, "decided": core.ErrDecided, "approver": core.ErrNotApprover}

func encodeResult(r core.ActionResult) clickResult {
	out := clickResult{Settled: r.Settled, Refusal: r.Refusal}
	if r.Err != nil {
		out.Err = r.Err.Error()
		for name, e := range clickErrors {
			if errors.Is(r.Err, e) {
				out.Err = name
			}
		}
	}
	return out
}

func (r clickResult) decode() core.ActionResult {
	out := core.ActionResult{Settled: r.Settled, Refusal: r.Refusal}
	if r.Err != "" {
		if out.Err = clickErrors[r.Err]; out.Err == nil {
			out.Err = errors.New(r.Err)
		}
	}
	return out
}

// forwardWait bounds how long a forwarded click waits for the replica
// whose turn asked.
const forwardWait = 2 * time.Second

// Forward implements core.Cluster.
func (c *Conversations) Forward(ctx context.Context, a core.Action) (core.ActionResult, bool) {
	sess, _, err := c.member()
	if err != nil {
		return core.ActionResult{}, false
	}
	raw, err := json.Marshal(a)
	if err != nil {
		return core.ActionResult{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, forwardWait)
	defer cancel()
	id := mailID()
	// Struck however Forward ends: a put whose answer was lost to ctx may
	// have been applied all the same.
	defer func() {
		dctx, dcancel := context.WithTimeout(c.ctx, time.Second)
		_, _ = c.cli.Txn(dctx).Then(clientv3.OpDelete(c.prefix+"click/"+id), clientv3.OpDelete(c.prefix+"answer/"+id)).Commit()
		dcancel()
	}()
	put, err := c.cli.Put(ctx, c.prefix+"click/"+id, string(raw), clientv3.WithLease(sess.Lease()))
	if err != nil {
		return core.ActionResult{}, false
	}
	for resp := range c.cli.Watch(ctx, c.prefix+"answer/"+id, clientv3.WithRev(put.Header.Revision+1), clientv3.WithFilterDelete()) {
		for _, ev := range resp.Events {
			var r clickResult
			if json.Unmarshal(ev.Kv.Value, &r) == nil {
				return r.decode(), true
			}
		}
	}
	return core.ActionResult{}, false
}

// act answers a forwarded click when a turn here waits for it.
func (c *Conversations) act(id string, raw []byte) {
	var a core.Action
	if json.Unmarshal(raw, &a) != nil {
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, forwardWait)
	defer cancel()
	res, ok := c.hostOf().Act(ctx, a)
	if !ok {
		return
	}
	out, _ := json.Marshal(encodeResult(res))
	// Only while the click is there: once its sender has stopped waiting
	// (and struck it), an answer would stay in etcd for good.
	click := c.prefix + "click/" + id
	resp, err := c.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(click), ">", 0)).
		Then(clientv3.OpPut(c.prefix+"answer/"+id, string(out))).Commit()
	if err != nil {
		c.log.Warn("answer a forwarded click", "err", err)
	} else if !resp.Succeeded {
		c.log.Warn("a forwarded click was acted on after its sender stopped waiting", "settled", res.Settled)
	}
}
