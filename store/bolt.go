package store

import (
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Bolt is a Store in one bbolt file, for one machine.
//
// One process owns the file at a time: a second Open of the same file, in
// this process or another, fails with an error wrapping ErrLocked after
// about a second instead of hanging. Every method is safe for concurrent
// use by many goroutines. A write returns once it is durable (fsynced);
// concurrent writes share transactions (group commit), so many goroutines
// writing at once do not queue for one fsync each.
type Bolt struct {
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
// It fails with an error wrapping ErrLocked when another Bolt (of this or
// another process) holds the file, ErrCorrupt when the file is not a golem
// store and ErrSchemaTooNew when a newer golem wrote it. Seen event ids whose
// time to live has passed are dropped on the way.
func Open(path string) (*Bolt, error) {
	return open(path, defaultOptions())
}

// Close finishes the writes already submitted, then releases the file and
// its lock. Afterwards every method fails with ErrClosed; closing again
// does nothing.
func (s *Bolt) Close() error {
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
