package etcdstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golem-chat/golem/store"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// activityMirror is every conversation's last use, kept in memory by a
// watch of conv/ from the first ListConversations on, so that a listing
// reads one key's revision instead of every record (10,000 of them take
// some 35 ms of etcd's and the client's time). It is current through rev:
// the watch's events, and progress notifications, which etcd sends with
// every event up to their revision delivered. Its watcher is its own, so
// that asking for progress wakes no other watch of the client.
type activityMirror struct {
	s     *Store
	w     clientv3.Watcher
	start sync.Once

	mu      sync.Mutex
	convs   map[string]store.ConversationTime // by record key
	rev     int64                             // current through it; 0: not loaded
	bad     map[string]bool                   // records it could not read: lists read etcd
	changed chan struct{}                     // closed as rev moves
}

// mirrorWait bounds how long a listing waits for the mirror to catch up
// before it reads every record instead.
const mirrorWait = time.Second

func newActivityMirror(s *Store) *activityMirror {
	return &activityMirror{s: s, convs: map[string]store.ConversationTime{}, bad: map[string]bool{}, changed: make(chan struct{})}
}

// list is the mirror's conversations, by key, once it is current through
// a revision read now; ok false when it is not within mirrorWait (the
// caller reads etcd).
func (m *activityMirror) list(ctx context.Context) ([]store.ConversationTime, bool) {
	m.start.Do(func() {
		m.w = clientv3.NewWatcher(m.s.cli)
		go m.run()
	})
	now, err := m.s.cli.Get(ctx, m.s.prefix+"conv", clientv3.WithCountOnly()) // its header: the revision now
	if err != nil {
		return nil, false
	}
	want := now.Header.Revision
	ctx, cancel := context.WithTimeout(ctx, mirrorWait)
	defer cancel()
	for {
		m.mu.Lock()
		rev, corrupt, changed := m.rev, len(m.bad) > 0, m.changed
		if rev >= want && !corrupt {
			out := make([]store.ConversationTime, 0, len(m.convs))
			keys := make([]string, 0, len(m.convs))
			for k := range m.convs {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				out = append(out, m.convs[k])
			}
			m.mu.Unlock()
			return out, true
		}
		m.mu.Unlock()
		if corrupt {
			return nil, false
		}
		if rev > 0 {
			_ = m.w.RequestProgress(ctx)
		}
		select {
		case <-changed:
		case <-time.After(50 * time.Millisecond): // a progress asked for before the watch began
		case <-ctx.Done():
			return nil, false
		}
	}
}

// run loads the records and follows them until the store closes, loading
// again after a watch ends (compacted, etcd out of reach).
func (m *activityMirror) run() {
	ctx := m.s.ctx
	for ctx.Err() == nil {
		if err := m.follow(ctx); err != nil && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	_ = m.w.Close()
}

func (m *activityMirror) follow(ctx context.Context) error {
	dir := m.s.prefix + "conv/"
	lctx, cancel := context.WithTimeout(ctx, m.s.timeout)
	resp, err := m.s.cli.Get(lctx, dir, clientv3.WithPrefix())
	cancel()
	if err != nil {
		return err
	}
	m.mu.Lock()
	clear(m.convs)
	clear(m.bad)
	for _, kv := range resp.Kvs {
		m.put(dir, kv)
	}
	m.advance(resp.Header.Revision)
	m.mu.Unlock()
	wctx, stop := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer stop()
	for wr := range m.w.Watch(wctx, dir, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)) {
		if err := wr.Err(); err != nil {
			m.mu.Lock()
			m.rev = 0 // not current until loaded again
			m.mu.Unlock()
			return err
		}
		m.mu.Lock()
		rev := wr.Header.Revision // a progress notification's: every event to it came
		if !wr.IsProgressNotify() {
			rev = 0
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE {
					delete(m.convs, string(ev.Kv.Key))
					delete(m.bad, string(ev.Kv.Key))
				} else {
					m.put(dir, ev.Kv)
				}
				rev = max(rev, ev.Kv.ModRevision)
			}
		}
		m.advance(rev)
		m.mu.Unlock()
	}
	m.mu.Lock()
	m.rev = 0
	m.mu.Unlock()
	return errors.New("store: the conversations' watch ended")
}

// put keeps one record's last use, with mu held.
func (m *activityMirror) put(dir string, kv *mvccpb.KeyValue) {
	k := string(kv.Key)
	delete(m.convs, k)
	delete(m.bad, k)
	key, err := store.ParseKey(strings.TrimPrefix(k, dir))
	if err != nil {
		m.bad[k] = true
		return
	}
	at, ok := store.LastUsedOf(kv.Value)
	if !ok {
		c, err := decodeConversation(key, kv)
		if err != nil {
			m.bad[k] = true
			return
		}
		at = c.LastUsed
	}
	m.convs[k] = store.ConversationTime{Key: key, LastUsed: at}
}

// advance moves rev on, with mu held, waking the listings that wait.
func (m *activityMirror) advance(rev int64) {
	if rev > m.rev {
		m.rev = rev
		close(m.changed)
		m.changed = make(chan struct{})
	}
}
