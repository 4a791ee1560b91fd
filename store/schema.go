package store

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// The buckets of schema version 1.
var (
	bucketMeta          = []byte("meta")          // "version" -> uint64 big-endian
	bucketConversations = []byte("conversations") // conversation key -> convRecord JSON
	bucketSeen          = []byte("seen")          // event id -> expiry, unix ns, uint64 big-endian
	bucketSeenExpiry    = []byte("seen_expiry")   // expiry (8 bytes BE) + event id -> empty; oldest first
	bucketTurns         = []byte("turns")         // turn id -> InFlight JSON
	bucketState         = []byte("state")         // adapter key -> raw bytes
	// Schema version 3.
	bucketApprovals = []byte("approvals") // approval id -> Approval JSON

	keyVersion = []byte("version")
)

// A migration brings the file from schema version i (its index in the
// table) to version i+1. It runs inside the one write transaction that also
// records the new version, so a failed migration leaves the file as it was.
type migration func(tx *bolt.Tx) error

// migrations is the schema history; the schema version this code writes is
// len(migrations). Version 0 is an empty file. To change the schema, append
// a migration; never edit one that has shipped.
var migrations = []migration{
	0: createV1,
	1: createUsage,
	2: createApprovals,
	3: createSchedules,
	4: createTurnLog,
	5: createScheduleKeys,
}

// createV1 creates the buckets of the first schema.
func createV1(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketConversations, bucketSeen, bucketSeenExpiry, bucketTurns, bucketState} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

// createApprovals adds the approvals' audit records (schema version 3).
func createApprovals(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketApprovals); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketApprovals, err)
	}
	return nil
}

// schemaVersion reads the file's schema version: 0 for an empty file. It
// fails with ErrCorrupt for a bbolt file of another program or an
// unreadable version, and with ErrSchemaTooNew for a version above want.
func schemaVersion(tx *bolt.Tx, want uint64) (uint64, error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		if name, _ := tx.Cursor().First(); name != nil {
			return 0, fmt.Errorf("%w: no schema version, but a bucket %q", ErrCorrupt, name)
		}
		return 0, nil
	}
	raw := meta.Get(keyVersion)
	if len(raw) != 8 {
		return 0, fmt.Errorf("%w: unreadable schema version %x", ErrCorrupt, raw)
	}
	have := binary.BigEndian.Uint64(raw)
	if have > want {
		return 0, fmt.Errorf("%w: schema version %d, this golem knows up to %d; upgrade golem",
			ErrSchemaTooNew, have, want)
	}
	return have, nil
}

// migrate runs the migrations from the file's version up to want and
// records want as the version.
func migrate(tx *bolt.Tx, table []migration, want uint64) error {
	have, err := schemaVersion(tx, want)
	if err != nil {
		return err
	}
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketMeta, err)
	}
	for v := have; v < want; v++ {
		if err := table[v](tx); err != nil {
			return fmt.Errorf("migrate schema %d to %d: %w", v, v+1, err)
		}
	}
	if err := meta.Put(keyVersion, binary.BigEndian.AppendUint64(nil, want)); err != nil {
		return fmt.Errorf("record schema version: %w", err)
	}
	return nil
}
