package store

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// maxBatch bounds how many writes share one transaction.
const maxBatch = 256

// A writeReq is one write waiting for the writer goroutine.
type writeReq struct {
	fn   func(tx *bolt.Tx) error
	done chan error
}

// update runs fn in a write transaction and returns once that transaction
// is durable. Writes go through one writer goroutine that commits all the
// writes waiting at that moment in one transaction (group commit): a lone
// write costs one transaction as with bbolt's Update, while many concurrent
// writers share the cost of each fsync instead of queueing for one apiece.
// Within a transaction the functions run one after the other, so each sees
// the effects of those before it and read-modify-write stays atomic.
//
// fn may run more than once (when another write in its batch fails, the
// rest are retried), so it must set its results afresh on every run.
func (s *Bolt) update(fn func(tx *bolt.Tx) error) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	done := make(chan error, 1)
	s.writes <- writeReq{fn: fn, done: done}
	s.mu.RUnlock()
	return <-done
}

// writeLoop is the writer goroutine; it ends when writes is closed and
// drained.
func (s *Bolt) writeLoop() {
	defer close(s.writerDone)
	batch := make([]writeReq, 0, maxBatch)
	for req := range s.writes {
		batch = append(batch[:0], req)
	drain:
		for len(batch) < maxBatch {
			select {
			case r, ok := <-s.writes:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		s.runBatch(batch)
	}
}

// runBatch commits batch in one transaction. A write that fails is taken
// out and answered with its own error from a transaction of its own, and
// the rest are retried together, so one bad write never fails the others.
func (s *Bolt) runBatch(batch []writeReq) {
	for len(batch) > 0 {
		failed := -1
		err := s.commit(func(tx *bolt.Tx) error {
			for i, r := range batch {
				if err := s.call(r.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed < 0 || len(batch) == 1 {
			for _, r := range batch {
				r.done <- err
			}
			return
		}
		r := batch[failed]
		batch = append(batch[:failed], batch[failed+1:]...)
		r.done <- s.commit(r.fn)
	}
}

// commit runs fn in a bbolt write transaction of its own, turning panics
// on damaged pages into errors.
func (s *Bolt) commit(fn func(tx *bolt.Tx) error) (err error) {
	defer s.recoverCorrupt(&err)
	return s.db.Update(fn)
}

// call runs one write of a batch, turning a panic into an error so that
// only that write fails.
func (s *Bolt) call(fn func(tx *bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer s.recoverCorrupt(&err)
	return fn(tx)
}

// view runs fn in a read transaction, turning panics on damaged pages into
// errors.
// After Close it fails with ErrClosed.
func (s *Bolt) view(fn func(tx *bolt.Tx) error) (err error) {
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	defer s.recoverCorrupt(&err)
	err = s.db.View(fn)
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) { // closed meanwhile
		return ErrClosed
	}
	return err
}

// recoverCorrupt turns a bbolt panic into an error wrapping ErrCorrupt.
// bbolt rolls its transaction back on the way out, so the store stays
// usable for the parts of the file that are sound.
func (s *Bolt) recoverCorrupt(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w (bbolt: %v)", ErrCorrupt, r)
	}
}
