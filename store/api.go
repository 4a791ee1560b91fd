// Package store keeps golem's state in one bbolt file: conversation
// sessions and settings, seen platform event ids, turns in flight, usage
// totals (per conversation, user, day and month) and small
// adapter state.
//
// One process owns the file at a time: a second Open of the same file, in
// this process or another, fails with an error wrapping ErrLocked after
// about a second instead of hanging. Every method of *Store is safe for
// concurrent use by many goroutines. A write returns once it is durable
// (fsynced); concurrent writes share transactions (group commit), so many
// goroutines writing at once do not queue for one fsync each.
package store

import (
	"errors"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrLocked means another process has the database file open.
var ErrLocked = errors.New("store: the database file is in use by another process")

// ErrCorrupt means the file is not a readable golem store: it is damaged,
// it is not a bbolt file at all, or it is a bbolt file of another program.
var ErrCorrupt = errors.New("store: the database file is damaged or is not a golem store")

// ErrSchemaTooNew means the file was written by a newer golem whose schema
// version this code does not know; opening it could lose data, so Open
// refuses.
var ErrSchemaTooNew = errors.New("store: the database file was written by a newer golem")

// ErrClosed is returned by writes to a Store after Close.
var ErrClosed = errors.New("store: closed")

// Conversation is what the store keeps per conversation key.
type Conversation struct {
	Key       string
	Engine    string // "" = the configured default
	Model     string // "" = the engine's default
	SessionID string // "" = no session yet
	LastUsed  time.Time
}

// InFlight is a turn that has started and not yet ended. What is left at
// start-up was interrupted by a crash or restart.
type InFlight struct {
	ID       string // unique per turn
	Key      string // conversation key
	Platform string
	Channel  string
	Thread   string
	ReplyTo  string
	// The answer message, once posted (empty before).
	AnswerChannel string
	AnswerThread  string
	AnswerID      string
	Started       time.Time
	// The agent process running the turn, once started (0 before, and for
	// engines that run in-process): its process group id (the CLI's pid)
	// and its start time in clock ticks after boot, which tells it from an
	// unrelated process that reuses the pid. At start-up a group still
	// alive is stopped before the turn is marked interrupted.
	AgentGroup int
	AgentStart uint64
	// Stream marks a turn whose answer went to a stream (the HTTP API, the
	// terminal) rather than a posted message; it is recorded only while an
	// agent process runs, so that a restart can stop it.
	Stream bool
}

// Store is an open golem database. Create it with Open and release it with
// Close; its methods are safe for concurrent use.
type Store struct {
	db   *bolt.DB
	path string
	// now is the clock; tests replace it through options.
	now func() time.Time

	// Writes queue here for the writer goroutine (see update).
	writes     chan writeReq
	writerDone chan struct{} // closed when the writer has finished
	mu         sync.RWMutex  // guards closed and sending on writes
	closed     bool
}

// Open opens the store at path, creating the file and its parent folders
// when missing, and brings its schema up to the version this code writes.
// It fails with an error wrapping ErrLocked when another Store (of this or
// another process) holds the file, ErrCorrupt when the file is not a golem
// store and ErrSchemaTooNew when a newer golem wrote it. Seen event ids whose
// time to live has passed are dropped on the way.
func Open(path string) (*Store, error) {
	return open(path, defaultOptions())
}

// Close finishes the writes already submitted, then releases the file and
// its lock. Afterwards every method returns an error (writes ErrClosed);
// closing again does nothing.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.writes)
	s.mu.Unlock()
	<-s.writerDone
	if err := s.db.Close(); err != nil {
		return wrap("close", err)
	}
	return nil
}
