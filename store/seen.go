package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// prunePerMark bounds how many expired ids one MarkSeen drops. Each call
// adds at most one id and drops up to this many, so the bucket shrinks back
// to the ids still alive while the work per call stays small.
const prunePerMark = 32

// MarkSeen records the platform event id and reports whether this is the
// first time it is seen within its time to live: true for a new id, false
// for a redelivery. The check and the record are one transaction, so of many
// concurrent calls with the same id exactly one gets true. The answer
// survives Close and Open. Once ttl has passed the id counts as new again;
// expired ids are dropped, a few per call and all of them on Open.
func (s *Bolt) MarkSeen(id string, ttl time.Duration) (bool, error) {
	if id == "" {
		return false, errors.New("store: mark seen: empty id")
	}
	if ttl <= 0 {
		return false, fmt.Errorf("store: mark seen: ttl %v is not positive", ttl)
	}
	now := s.now()
	expiry := now.Add(ttl).UnixNano()
	var first bool
	err := s.update(func(tx *bolt.Tx) error {
		first = false
		// Pruning first also drops this id if it has expired.
		if _, err := pruneSeen(tx, now.UnixNano(), prunePerMark); err != nil {
			return err
		}
		seen := tx.Bucket(bucketSeen)
		if raw := seen.Get([]byte(id)); raw != nil {
			if len(raw) == 8 && int64(binary.BigEndian.Uint64(raw)) > now.UnixNano() {
				return nil
			}
			// Expired but not yet pruned (more than prunePerMark were due),
			// or unreadable: replace it.
			if err := forgetSeen(tx, []byte(id), raw); err != nil {
				return err
			}
		}
		first = true
		exp := binary.BigEndian.AppendUint64(nil, uint64(expiry))
		if err := seen.Put([]byte(id), exp); err != nil {
			return err
		}
		return tx.Bucket(bucketSeenExpiry).Put(expiryKey(expiry, id), nil)
	})
	if err != nil {
		return false, wrap("mark seen", err)
	}
	return first, nil
}

// expiryKey is the seen_expiry index key: the expiry in 8 big-endian bytes,
// so that the index iterates oldest first, followed by the id.
func expiryKey(expiry int64, id string) []byte {
	k := make([]byte, 0, 8+len(id))
	k = binary.BigEndian.AppendUint64(k, uint64(expiry))
	return append(k, id...)
}

// forgetSeen drops id, whose stored expiry is raw, from both buckets.
func forgetSeen(tx *bolt.Tx, id, raw []byte) error {
	if len(raw) == 8 {
		idx := append(bytes.Clone(raw), id...)
		if err := tx.Bucket(bucketSeenExpiry).Delete(idx); err != nil {
			return err
		}
	}
	return tx.Bucket(bucketSeen).Delete(id)
}

// hasExpired reports whether some seen id has expired at now.
func hasExpired(tx *bolt.Tx, now int64) bool {
	k, _ := tx.Bucket(bucketSeenExpiry).Cursor().First()
	return len(k) >= 8 && int64(binary.BigEndian.Uint64(k)) <= now
}

// pruneSeen drops up to limit ids expired at now, oldest first, and returns
// how many it dropped.
func pruneSeen(tx *bolt.Tx, now int64, limit int) (int, error) {
	idx := tx.Bucket(bucketSeenExpiry)
	var due [][]byte
	c := idx.Cursor()
	for k, _ := c.First(); k != nil && len(due) < limit; k, _ = c.Next() {
		if len(k) >= 8 && int64(binary.BigEndian.Uint64(k)) > now {
			break
		}
		due = append(due, bytes.Clone(k))
	}
	// Delete after the walk: deleting under a cursor can make it skip keys.
	seen := tx.Bucket(bucketSeen)
	for _, k := range due {
		if err := idx.Delete(k); err != nil {
			return 0, err
		}
		if len(k) < 8 {
			continue
		}
		id := k[8:]
		// The id may have been marked again with a later expiry; its newer
		// entry then stays.
		if raw := seen.Get(id); raw != nil && !bytes.Equal(raw, k[:8]) {
			continue
		}
		if err := seen.Delete(id); err != nil {
			return 0, err
		}
	}
	return len(due), nil
}
