// Package journal keeps the events an adapter has confirmed to its
// platform but not yet handed to core, so that a kill loses none of them.
//
// A platform forgets an event once the adapter has confirmed it (Slack's
// envelope ack, Telegram's next getUpdates offset, Discord's gateway moving
// on), and none sends it again. An event that reaches core.Handler at once
// needs nothing more: Handle records its event id before it returns. One
// that waits first (its files downloading, or its lane busy with one that
// is) is kept here, by id, as the raw payload it came in, in one key of a
// core.StateStore: saved before it is confirmed, struck once Handle has
// returned for it. The next start replays what is left, oldest first; a
// replayed event keeps its event id, so core drops any that had reached
// Handle just before the kill.
//
// The journal is bounded (Max entries, MaxBytes of payloads), so that a
// flood of messages while downloads hang cannot grow the store without
// limit, nor make a save (which rewrites the key) cost more than the
// bound: past it an event is not kept, and is handed on as usual, so only
// a kill while it waits can lose it; that is logged, once per overflow.
// A message kept and struck costs two saves: about 3 ms in all in the
// bbolt store, 16 ms with 255 messages of 2 KB held (BenchmarkKeepAndDone).
package journal

import (
	"cmp"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"

	"github.com/golem-chat/golem/core"
)

// Bounds used when Options leave them zero.
const (
	DefaultMax      = 256
	DefaultMaxBytes = 1 << 20
)

// Options configure a Journal.
type Options struct {
	// Store keeps the journal; nil keeps nothing (every call is a no-op
	// but the bookkeeping, and Replay finds nothing).
	Store core.StateStore
	// Key is the store key ("slack.pending").
	Key string
	// ID is an event's id from its raw payload; an entry it gives no id
	// for is dropped on loading.
	ID func(raw json.RawMessage) string
	// Max and MaxBytes bound the entries kept and their payloads' total
	// size; default DefaultMax and DefaultMaxBytes.
	Max      int
	MaxBytes int
	Logger   *slog.Logger
}

// Journal is the set of events not yet handed on, kept in insertion order.
// It is safe for concurrent use.
type Journal struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	entries map[string]entry
	next    int64 // the sequence number of the next entry kept
	bytes   int   // the payloads' total size
	dirty   bool  // entries changed since they were last saved
	full    bool  // an event was refused since the journal last had room
}

type entry struct {
	seq int64
	raw json.RawMessage
}

// New returns the journal of opts, loading what the store holds.
func New(opts Options) *Journal {
	if opts.Max <= 0 {
		opts.Max = DefaultMax
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	j := &Journal{opts: opts, log: opts.Logger, entries: map[string]entry{}}
	j.load()
	return j
}

// load reads the store's journal into entries, in its stored order.
func (j *Journal) load() {
	if j.opts.Store == nil {
		return
	}
	b, err := j.opts.Store.Load(j.opts.Key)
	if err != nil {
		j.log.Error("journal: loading the events not yet handed on failed", "key", j.opts.Key, "err", err)
		return
	}
	if len(b) == 0 {
		return
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(b, &raws); err != nil {
		j.log.Error("journal: the saved events not yet handed on are unreadable; dropped", "key", j.opts.Key, "err", err)
		j.dirty = true
		return
	}
	for _, raw := range raws {
		id := j.opts.ID(raw)
		if _, dup := j.entries[id]; id == "" || dup {
			j.dirty = true
			continue
		}
		j.entries[id] = entry{seq: j.next, raw: raw}
		j.next++
		j.bytes += len(raw)
	}
}

// Pending is the events kept, oldest first.
func (j *Journal) Pending() []json.RawMessage {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.sortedLocked()
}

// Len is the number of events kept.
func (j *Journal) Len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.entries)
}

// Replay hands each event loaded from the store to take, oldest first, and
// strikes those take reports it did not keep (handed on at once, or not
// for the bot), then saves. Call it before the adapter takes new events.
func (j *Journal) Replay(take func(raw json.RawMessage) (kept bool)) {
	for _, raw := range j.Pending() {
		if !take(raw) {
			j.forget(j.opts.ID(raw))
		}
	}
	j.Save()
}

// Adopt hands on, oldest first, the events of the journal kept under key
// in the same store (a replica's that left the cluster), with take as
// Replay's, then empties that journal, and returns how many it held. take
// has put each event into core or into this journal (saved) when it
// returns, so none is lost in between; one handed on twice (its replica
// was only cut off, and hands it on too) is dropped by core's dedupe.
func (j *Journal) Adopt(key string, take func(raw json.RawMessage) (kept bool)) int {
	other := New(Options{Store: j.opts.Store, Key: key, ID: j.opts.ID, Max: j.opts.Max, MaxBytes: j.opts.MaxBytes, Logger: j.log})
	n := other.Len()
	if n > 0 {
		other.Replay(func(raw json.RawMessage) bool {
			take(raw)
			return false // kept here, if at all, not there
		})
	}
	return n
}

// Keep adds an event, unless it is already kept; it is written at the
// next Save, which the caller makes before confirming the event. It
// reports false when the journal is full: the event is not kept.
func (j *Journal) Keep(id string, raw json.RawMessage) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, held := j.entries[id]; held {
		return true
	}
	if len(j.entries) >= j.opts.Max || j.bytes+len(raw) > j.opts.MaxBytes {
		if !j.full {
			j.full = true
			j.log.Warn("journal: full; events waiting beyond it are lost if golem is killed before they are handed on",
				"key", j.opts.Key, "events", len(j.entries), "bytes", j.bytes, "max", j.opts.Max, "max_bytes", j.opts.MaxBytes)
		}
		return false
	}
	j.full = false
	j.entries[id] = entry{seq: j.next, raw: slices.Clone(raw)}
	j.next++
	j.bytes += len(raw)
	j.dirty = true
	return true
}

// Done strikes an event once it needs no handing on, and saves the journal
// if it was kept. An event never kept costs nothing.
func (j *Journal) Done(id string) {
	if j.forget(id) {
		j.Save()
	}
}

// forget removes an event without saving, reporting whether it was kept.
func (j *Journal) forget(id string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	e, held := j.entries[id]
	if held {
		delete(j.entries, id)
		j.bytes -= len(e.raw)
		j.dirty = true
	}
	return held
}

// Save writes the journal if it changed since it was last written. Writes
// are made under the lock, so the journal stored is always the latest. A
// failed write is logged and tried again at the next Save.
func (j *Journal) Save() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.dirty || j.opts.Store == nil {
		j.dirty = false
		return
	}
	var value []byte // nil removes the key
	if len(j.entries) > 0 {
		value, _ = json.Marshal(j.sortedLocked())
	}
	if err := j.opts.Store.Save(j.opts.Key, value); err != nil {
		j.log.Error("journal: saving the events not yet handed on failed", "key", j.opts.Key, "err", err)
		return
	}
	j.dirty = false
}

func (j *Journal) sortedLocked() []json.RawMessage {
	es := make([]entry, 0, len(j.entries))
	for _, e := range j.entries {
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]json.RawMessage, len(es))
	for i, e := range es {
		out[i] = e.raw
	}
	return out
}
