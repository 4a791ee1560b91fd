package store

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// lockTimeout is how long Open waits for another holder of the file to let
// go (a previous golem that is still shutting down) before reporting
// ErrLocked.
const lockTimeout = time.Second

// options are Open's knobs that only tests turn.
type options struct {
	now         func() time.Time
	lockTimeout time.Duration
	migrations  []migration
}

func defaultOptions() options {
	return options{now: time.Now, lockTimeout: lockTimeout, migrations: migrations}
}

// open is Open with explicit options.
func open(path string, o options) (*Bolt, error) {
	if path == "" {
		return nil, errors.New("store: open: empty path")
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("store: open %s: create folder: %w", path, err)
		}
	}
	db, err := openBolt(path, o.lockTimeout)
	if err != nil {
		return nil, err
	}
	s := &Bolt{
		db:         db,
		path:       path,
		now:        o.now,
		writes:     make(chan writeReq, maxBatch),
		writerDone: make(chan struct{}),
	}
	if err := s.prepare(o.migrations); err != nil {
		_ = db.Close()
		return nil, err
	}
	go s.writeLoop()
	return s, nil
}

// openBolt opens the bbolt file and turns bbolt's failures, including the
// panics it raises on some damaged files, into our errors. On failure the
// file is unlocked and closed, so a later Open reports the damage again
// rather than ErrLocked. (After a panic bbolt's memory map of the file
// cannot be reached and stays mapped until the process exits.)
func openBolt(path string, timeout time.Duration) (db *bolt.DB, err error) {
	var file *os.File
	defer func() {
		if r := recover(); r != nil {
			if file != nil {
				unlock(file)
				_ = file.Close()
			}
			db, err = nil, fmt.Errorf("store: open %s: %w (bbolt: %v)", path, ErrCorrupt, r)
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{
		Timeout: timeout,
		OpenFile: func(name string, flag int, mode os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, mode)
			file = f
			return f, err
		},
	})
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("store: open %s: %w", path, ErrLocked)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrChecksum),
		errors.Is(err, bolterrors.ErrVersionMismatch), errors.Is(err, bolterrors.ErrInvalidMapping):
		return nil, fmt.Errorf("store: open %s: %w: %w", path, ErrCorrupt, err)
	default:
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
}

// prepare checks the schema, migrates it when it is older than this code
// and drops expired seen ids. A file that needs neither costs one read
// transaction and no write.
func (s *Bolt) prepare(table []migration) error {
	want := uint64(len(table))
	var have uint64
	var expired bool
	now := s.now().UnixNano()
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		if have, err = schemaVersion(tx, want); err != nil {
			return err
		}
		expired = have == want && hasExpired(tx, now)
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: open %s: %w", s.path, err)
	}
	if have < want {
		err := s.commit(func(tx *bolt.Tx) error { return migrate(tx, table, want) })
		if err != nil {
			return fmt.Errorf("store: open %s: %w", s.path, err)
		}
		if have > 0 {
			slog.Info("store: schema migrated", "path", s.path, "from", have, "to", want)
		}
		expired = true
	}
	if expired {
		n, err := s.pruneAll(now)
		if err != nil {
			return fmt.Errorf("store: open %s: %w", s.path, err)
		}
		slog.Debug("store: expired seen ids dropped", "path", s.path, "count", n)
	}
	return nil
}

// pruneAll drops every seen id expired at now, in transactions of bounded
// size so a large backlog never makes one huge transaction.
func (s *Bolt) pruneAll(now int64) (int, error) {
	const chunk = 10000
	total := 0
	for {
		var n int
		err := s.commit(func(tx *bolt.Tx) error {
			var err error
			n, err = pruneSeen(tx, now, chunk)
			return err
		})
		total += n
		if err != nil {
			return total, fmt.Errorf("drop expired seen ids: %w", err)
		}
		if n < chunk {
			return total, nil
		}
	}
}

// wrap names the operation in an error from bbolt.
func wrap(op string, err error) error {
	return fmt.Errorf("store: %s: %w", op, err)
}
