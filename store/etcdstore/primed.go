package etcdstore

import (
	"math"
	"sync"

	"github.com/golem-chat/golem/store"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A replica claims a conversation in one transaction (package cluster),
// and its turn reads the conversation's record at once. The claim reads
// the record too (ConversationOp), and Prime keeps what it read for that
// one read, which then makes no round trip of its own.
//
// A primed record is right as long as nothing wrote the record after the
// claim's revision. Another replica cannot: from the claim on, this one
// owns the conversation, and the fence refuses the others' writes. This
// store's own writes are noted with their revisions, and a record read
// before one of them is not used.

// maxWritten bounds the revisions of writes kept for primed records: past
// it those known are dropped, and a record read before the newest of them
// is not used.
const maxWritten = 4096

// primer holds the records claims read, until a turn reads them.
type primer struct {
	mu      sync.Mutex
	records map[store.Key]primedRecord
	written map[store.Key]int64 // the revision of this store's last write of a record
	floor   int64               // the newest revision dropped from written
	// known are the records last read or written here, at most
	// maxWritten (see knownRecord).
	known map[store.Key]*mvccpb.KeyValue // nil value: no record
}

type primedRecord struct {
	kv  *mvccpb.KeyValue // nil: no record
	rev int64            // the revision the claim read it at
}

// ConversationOp is the read of key's record, for a claim's transaction;
// hand its answer to Prime.
func (s *Store) ConversationOp(key store.Key) clientv3.Op { return clientv3.OpGet(s.convKey(key)) }

// Prime keeps key's record as a transaction at revision rev read it with
// ConversationOp, for the next Conversation(key).
func (s *Store) Prime(key store.Key, rev int64, kvs []*mvccpb.KeyValue) {
	p := &s.primed
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.written[key] > rev || p.floor > rev {
		return // this store wrote the record since
	}
	if p.records == nil {
		p.records = map[store.Key]primedRecord{}
	}
	r := primedRecord{rev: rev}
	if len(kvs) > 0 {
		r.kv = kvs[0]
	}
	p.records[key] = r
}

// Unprime forgets what was kept of key: this replica no longer owns it.
func (s *Store) Unprime(key store.Key) {
	p := &s.primed
	p.mu.Lock()
	delete(p.records, key)
	delete(p.written, key)
	delete(p.known, key)
	p.mu.Unlock()
}

// A read-modify-write of a record (UpdateConversation, FinishTurn)
// commits only if the record's mod revision is still the one it read, and
// learns the record as it is now when not. So it need not read the record
// first when it knows it already: the one this store last read or wrote.
// When another writer came between, the write is refused and tried again
// with what that writer left: one round trip more, never a change lost.

// knownRecord returns key's record as this store last read or wrote it
// (nil: no record), if it knows it.
func (s *Store) knownRecord(key store.Key) (*mvccpb.KeyValue, bool) {
	p := &s.primed
	p.mu.Lock()
	defer p.mu.Unlock()
	kv, ok := p.known[key]
	return kv, ok
}

// know notes key's record as read or written (kv nil: none).
func (s *Store) know(key store.Key, kv *mvccpb.KeyValue) {
	p := &s.primed
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.known == nil || len(p.known) >= maxWritten {
		p.known = map[store.Key]*mvccpb.KeyValue{}
	}
	p.known[key] = kv
}

// knowWritten notes key's record as a successful write resp left it.
func (s *Store) knowWritten(key store.Key, raw []byte, resp *clientv3.TxnResponse) {
	s.know(key, &mvccpb.KeyValue{Key: []byte(s.convKey(key)), Value: raw, ModRevision: resp.Header.Revision})
}

// unknow forgets key's record: a write whose outcome is not known.
func (s *Store) unknow(key store.Key) {
	p := &s.primed
	p.mu.Lock()
	delete(p.known, key)
	p.mu.Unlock()
}

// takePrimed returns, once, the record kept of key.
func (s *Store) takePrimed(key store.Key) (*mvccpb.KeyValue, bool) {
	p := &s.primed
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.records[key]
	if !ok {
		return nil, false
	}
	delete(p.records, key)
	if p.written[key] > r.rev || p.floor > r.rev {
		return nil, false
	}
	return r.kv, true
}

// wrote notes this store's write of key's record: at revision rev, or
// (resp nil) one that may have committed at any revision.
func (s *Store) wrote(key store.Key, resp *clientv3.TxnResponse) {
	rev := int64(math.MaxInt64)
	if resp != nil && resp.Header != nil {
		rev = resp.Header.Revision
	}
	p := &s.primed
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, ok := p.records[key]; ok && r.rev < rev {
		delete(p.records, key)
	}
	if len(p.written) >= maxWritten {
		p.forgetWrites()
	}
	if p.written == nil {
		p.written = map[store.Key]int64{}
	}
	p.written[key] = max(p.written[key], rev)
}

// forgetWrites drops the revisions of writes that are known, raising the
// floor to the newest. Writes whose revision is not known (their answer
// was lost) stay until their conversations are let go of; should they
// alone fill written, priming ends for this store's life.
func (p *primer) forgetWrites() {
	for k, w := range p.written {
		if w != math.MaxInt64 {
			p.floor = max(p.floor, w)
			delete(p.written, k)
		}
	}
	if len(p.written) >= maxWritten/2 {
		p.floor = math.MaxInt64
		clear(p.written)
	}
}
