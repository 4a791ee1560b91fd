// Package etcdstore is a store.Store in etcd, so that golem replicas on
// several machines can share one: `store: etcd://host:port,host:port/prefix`
// (etcds:// for TLS).
//
// Everything lives under the prefix, one key per record:
//
//	PREFIX/meta/schema      the schema version ("2"); Open refuses another golem's
//	PREFIX/conv/KEY         a conversation (store.Key's String), JSON
//	PREFIX/seen/ID          a seen event id: its expiry, unix ns; leased, so etcd drops it
//	PREFIX/turns/ID         a turn in flight, JSON
//	PREFIX/approvals/ID     an approval's audit record, JSON
//	PREFIX/usage/TOTAL      a usage total, JSON
//	PREFIX/turnlog/KEY/T-ID a conversation's latest turns (KEY path-escaped, T unix ns), JSON
//	PREFIX/state/KEY        adapter state, raw bytes (at most store.MaxValue)
//	PREFIX/schedules/ID     a scheduled prompt, JSON
//	PREFIX/schedule_keys/KEY/ID  the index of the schedules by conversation (KEY path-escaped), empty;
//	                        written in the transaction that writes the schedule (version 2)
//
// # Writes and fencing
//
// Every write is one etcd transaction, built by Store.txn. The writes that
// read before they write (UpdateConversation, ClearSession, AddUsage,
// FinishTurn, MarkSeen of an expired id, UpdateSchedule) compare the mod
// revisions of what they read and retry when another writer came between,
// so concurrent writers on any number of replicas never undo each other;
// a conversation's record and usage totals this store last read or wrote
// are not read again (the compare tells when another writer came). The
// other writes replace the record whole.
//
// A replica fences the writes to a conversation's records (its session and
// settings, its turns in flight) with the conversation's owner key (see
// SetFence and package cluster): a write commits only while this
// replica's lease owns the conversation, or no replica does and this one
// is still in the cluster, so the late writes of a replica that lost its
// lease while cut off from etcd are refused with store.ErrFenced, never
// applied over its successor's nor under the nose of the one about to
// take the conversation over.
package etcdstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golem-chat/golem/store"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// schemaVersion is the version of the layout above that this code writes.
// To change the layout, bump it and migrate in Open (migrate).
const schemaVersion = 2

// Defaults of Config's durations.
const (
	DefaultStartTimeout = 10 * time.Second
	DefaultTimeout      = 5 * time.Second
)

// maxRetries bounds the retries of a write whose compare failed because
// another writer came between its read and its write.
const maxRetries = 100

// Config says which etcd to use and how.
type Config struct {
	Endpoints []string // host:port of each member
	Prefix    string   // every key starts with Prefix + "/"
	// TLS, when set, is used to reach the members (etcds://).
	TLS *tls.Config
	// StartTimeout bounds Open's first answer from etcd; Timeout bounds
	// each call after that.
	StartTimeout time.Duration
	Timeout      time.Duration
	// DialOptions are added to the client's (tests count its calls).
	DialOptions []grpc.DialOption
}

// ParseURL reads `etcd://host:port,host:port/prefix`, or etcds:// for TLS
// (the caller then sets Config.TLS, see TLSConfig). The prefix defaults to
// "golem". Its errors do not name the store: key; the caller's do.
func ParseURL(raw string) (cfg Config, secure bool, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Config{}, false, fmt.Errorf("%q is not an etcd URL: %w", raw, err)
	}
	switch u.Scheme {
	case "etcd":
	case "etcds":
		secure = true
	default:
		return Config{}, false, fmt.Errorf("%q is not an etcd:// or etcds:// URL", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return Config{}, false, fmt.Errorf("%q: an etcd URL is etcd://host:port,host:port/prefix, with nothing else", raw)
	}
	for _, ep := range strings.Split(u.Host, ",") {
		host, port, ok := strings.Cut(ep, ":")
		if _, perr := strconv.Atoi(port); host == "" || !ok || perr != nil {
			return Config{}, false, fmt.Errorf("%q: endpoint %q is not host:port", raw, ep)
		}
		cfg.Endpoints = append(cfg.Endpoints, ep)
	}
	cfg.Prefix = strings.Trim(u.Path, "/")
	if cfg.Prefix == "" {
		cfg.Prefix = "golem"
	}
	return cfg, secure, nil
}

// TLSConfig is the TLS of etcds://: the members' certificates checked
// against the CA in caFile ("" = the system's roots), and the client
// certificate in certFile and keyFile where etcd asks for one ("" = none).
func TLSConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("store_tls.ca: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("store_tls.ca: %s holds no PEM certificate", caFile)
		}
	}
	if certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("store_tls.cert, store_tls.key: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// Store is a store.Store in etcd. Its methods are safe for concurrent use;
// a write returns once etcd has committed it (a quorum of members has it).
type Store struct {
	cli     *clientv3.Client
	prefix  string // with the trailing "/"
	where   string // for errors: the endpoints and prefix
	timeout time.Duration
	ctx     context.Context // cancelled by Close
	cancel  context.CancelFunc
	fenceMu sync.RWMutex
	fence   Fence   // nil: no fence (a golem alone)
	mailbox Mailbox // nil: BeginTurn strikes no mail (guarded by fenceMu too)

	mu     sync.RWMutex // guards closed and adding to calls
	closed bool
	calls  sync.WaitGroup // the calls under way, which Close waits for

	leaseMu sync.Mutex
	leases  map[time.Duration]seenLease // by ttl; see MarkSeen

	activity *activityMirror // ListConversations's
	primed   primer          // the records claims read (Prime), and those known (knownRecord)
	usage    knownUsage      // the usage totals known
	cuts     turnCuts        // where the conversations' turn records are trimmed next
}

var _ store.Store = (*Store)(nil)

// Open connects to etcd and checks the schema under the prefix: an empty
// prefix becomes a golem store, one holding a newer golem's schema fails
// with store.ErrSchemaTooNew and one holding something else fails with
// store.ErrCorrupt. etcd not answering within StartTimeout is an error
// naming the endpoints.
func Open(cfg Config) (*Store, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("store: etcd: no endpoints")
	}
	if cfg.Prefix == "" {
		return nil, errors.New("store: etcd: empty key prefix")
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	where := fmt.Sprintf("etcd %s prefix %q", strings.Join(cfg.Endpoints, ","), cfg.Prefix)
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		TLS:         cfg.TLS,
		DialTimeout: cfg.StartTimeout,
		Logger:      zap.NewNop(),
		// A member that stops answering is noticed by keepalive pings.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		DialOptions:          cfg.DialOptions,
	})
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", where, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Store{cli: cli, prefix: cfg.Prefix + "/", where: where, timeout: cfg.Timeout, ctx: ctx, cancel: cancel,
		leases: map[time.Duration]seenLease{}}
	s.activity = newActivityMirror(s)
	if err := s.checkSchema(cfg.StartTimeout); err != nil {
		cancel()
		_ = cli.Close()
		return nil, err
	}
	return s, nil
}

// checkSchema creates the schema marker of an empty prefix, or checks the
// one there.
func (s *Store) checkSchema(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	meta := s.prefix + "meta/schema"
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(meta), "=", 0)).
		Then(clientv3.OpGet(s.prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(1))).
		Else(clientv3.OpGet(meta)).
		Commit()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("store: %s: no answer within %v; is etcd running and reachable? (%w)", s.where, timeout, err)
		}
		return fmt.Errorf("store: %s: %w", s.where, err)
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if resp.Succeeded { // no marker
		if len(kvs) > 0 {
			return fmt.Errorf("store: %s: %w: no schema marker, but a key %q", s.where, store.ErrCorrupt, kvs[0].Key)
		}
		_, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(meta), "=", 0)).
			Then(clientv3.OpPut(meta, strconv.Itoa(schemaVersion))).
			Commit()
		if err != nil {
			return fmt.Errorf("store: %s: record the schema version: %w", s.where, err)
		}
		return s.checkSchema(timeout) // another replica may have won: check its marker
	}
	have, err := strconv.Atoi(string(kvs[0].Value))
	switch {
	case err != nil || have < 1:
		return fmt.Errorf("store: %s: %w: unreadable schema version %q", s.where, store.ErrCorrupt, kvs[0].Value)
	case have > schemaVersion:
		return fmt.Errorf("store: %s: %w: schema version %d, this golem knows up to %d; upgrade golem",
			s.where, store.ErrSchemaTooNew, have, schemaVersion)
	case have < schemaVersion:
		if err := s.migrate(ctx, have); err != nil {
			return fmt.Errorf("store: %s: migrate schema %d to %d: %w", s.where, have, schemaVersion, err)
		}
	}
	return nil
}

// migrate brings the layout from version have to schemaVersion. Each step
// may run on several replicas at once and again after a crash: it writes
// only what is missing, and the marker moves with a compare on the
// version it read.
func (s *Store) migrate(ctx context.Context, have int) error {
	meta := s.prefix + "meta/schema"
	for v := have; v < schemaVersion; v++ {
		if v == 1 { // 1 to 2: index the schedules by conversation
			all, err := s.cli.Get(ctx, s.prefix+"schedules/", clientv3.WithPrefix())
			if err != nil {
				return err
			}
			for _, kv := range all.Kvs {
				sc, err := decodeSchedule(kv)
				if err != nil {
					return err
				}
				entry := s.scheduleDir(sc.Key) + sc.ID
				if _, err := s.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision)},
					[]clientv3.Op{clientv3.OpPut(entry, "")}); err != nil {
					return err
				}
			}
		}
		if _, err := s.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.Value(meta), "=", strconv.Itoa(v))},
			[]clientv3.Op{clientv3.OpPut(meta, strconv.Itoa(v+1))}); err != nil {
			return err
		}
	}
	return nil
}

// Close waits for the calls under way to finish (each is bounded by
// Config.Timeout), so that a write already submitted is not cut short,
// then closes the connection to etcd. Afterwards every method fails with
// store.ErrClosed; closing again does nothing.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.calls.Wait()
	s.cancel()
	if err := s.cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("store: %s: close: %w", s.where, err)
	}
	return nil
}

// call gives one method's call its context, bounded by the store's
// timeout, or fails with store.ErrClosed after Close. The caller calls
// done when the call is over, which Close waits for.
func (s *Store) call() (ctx context.Context, done func(), err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, nil, store.ErrClosed
	}
	s.calls.Add(1)
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
	return ctx, func() { cancel(); s.calls.Done() }, nil
}

// fail names op in err, and turns the errors of a call that Close cut
// short into store.ErrClosed.
func (s *Store) fail(op string, err error) error {
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed && !errors.Is(err, store.ErrClosed) {
		err = fmt.Errorf("%w (%w)", store.ErrClosed, err)
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

// Fence tells the owner key of a conversation, a key that lives with this
// replica's membership (memberKey) and the lease this replica writes its
// records under; ok false writes unfenced.
type Fence func(key store.Key) (ownerKey, memberKey string, lease clientv3.LeaseID, ok bool)

// SetFence fences the writes to conversations' records from now on.
func (s *Store) SetFence(f Fence) {
	s.fenceMu.Lock()
	s.fence = f
	s.fenceMu.Unlock()
}

// txn commits ops when cmps hold, otherwise runs els. Every write goes
// through it or, for a conversation's records, through keyTxn.
func (s *Store) txn(ctx context.Context, cmps []clientv3.Cmp, ops []clientv3.Op, els ...clientv3.Op) (*clientv3.TxnResponse, error) {
	return s.cli.Txn(ctx).If(cmps...).Then(ops...).Else(els...).Commit()
}

// keyTxn is txn for a write to key's records, fenced: it commits only
// while this replica's lease owns key, or no replica does and this one is
// still in the cluster (its membership's key lives on the lease). A write
// that another replica's ownership, or the end of this one's membership,
// refused fails with store.ErrFenced; one that cmps refused returns els's
// responses, as txn does.
func (s *Store) keyTxn(ctx context.Context, key store.Key, cmps []clientv3.Cmp, ops []clientv3.Op, els ...clientv3.Op) (*clientv3.TxnResponse, error) {
	s.fenceMu.RLock()
	f := s.fence
	s.fenceMu.RUnlock()
	if f == nil {
		return s.txn(ctx, cmps, ops, els...)
	}
	owner, member, lease, ok := f(key)
	if !ok {
		return s.txn(ctx, cmps, ops, els...)
	}
	guards := [][]clientv3.Cmp{{clientv3.Compare(clientv3.LeaseValue(owner), "=", lease)}, // owned here
		{clientv3.Compare(clientv3.CreateRevision(owner), "=", 0), clientv3.Compare(clientv3.LeaseValue(member), "=", lease)}} // owned by none, and a member
	for i, g := range guards {
		all := append(append([]clientv3.Cmp(nil), cmps...), g...)
		resp, err := s.cli.Txn(ctx).If(all...).Then(ops...).Else(append(els[:len(els):len(els)], clientv3.OpGet(owner), clientv3.OpGet(member))...).Commit()
		if err != nil || resp.Succeeded {
			return resp, err
		}
		n := len(resp.Responses)
		got, me := resp.Responses[n-2].GetResponseRange().Kvs, resp.Responses[n-1].GetResponseRange().Kvs
		resp.Responses = resp.Responses[:n-2]
		stillMember := len(me) > 0 && clientv3.LeaseID(me[0].Lease) == lease
		switch {
		case len(got) > 0 && clientv3.LeaseID(got[0].Lease) == lease, len(got) == 0 && i == 1 && stillMember:
			return resp, nil // the fence held: cmps refused it
		case len(got) > 0, len(got) == 0 && i == 1:
			return nil, store.ErrFenced // another owner, or no longer a member
		}
		// owned by none: try the second guard
	}
	return nil, store.ErrFenced
}

// put is an unconditional write of one record.
func (s *Store) put(ctx context.Context, key string, value []byte) error {
	if len(value) > store.MaxValue {
		return fmt.Errorf("%w: %d bytes, at most %d", store.ErrTooLarge, len(value), store.MaxValue)
	}
	_, err := s.txn(ctx, nil, []clientv3.Op{clientv3.OpPut(key, string(value))})
	return err
}

// remove is an unconditional delete of one record.
func (s *Store) remove(ctx context.Context, key string) error {
	_, err := s.txn(ctx, nil, []clientv3.Op{clientv3.OpDelete(key)})
	return err
}

// Client is the store's etcd client, for what replicas share beyond the
// store (package cluster).
func (s *Store) Client() *clientv3.Client { return s.cli }

// Prefix is the store's key prefix, without its trailing "/".
func (s *Store) Prefix() string { return strings.TrimSuffix(s.prefix, "/") }
