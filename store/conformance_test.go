package store_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/store/storetest"
	bolt "go.etcd.io/bbolt"
)

// TestConformance runs the store suite against the bbolt backend.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		path := filepath.Join(t.TempDir(), "golem.db")
		raw := func(write bool, fn func(tx *bolt.Tx) error) error {
			db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
			if err != nil {
				return err
			}
			defer db.Close()
			if write {
				return db.Update(fn)
			}
			return db.View(fn)
		}
		return storetest.Backend{
			Open: func() (store.Store, error) { return store.Open(path) },
			PutScheduleRecord: func(id string, v []byte) error {
				return raw(true, func(tx *bolt.Tx) error { return tx.Bucket(store.ScheduleBucket).Put([]byte(id), v) })
			},
			ScheduleIndexEntry: func(key store.Key, id string) (v []byte, found bool, err error) {
				err = raw(false, func(tx *bolt.Tx) error {
					want := store.ScheduleIndexKey(key, id)
					k, val := tx.Bucket(store.ScheduleIndexBucket).Cursor().Seek(want)
					if found = bytes.Equal(k, want); found {
						v = bytes.Clone(val)
					}
					return nil
				})
				return v, found, err
			},
			PutScheduleIndexEntry: func(key store.Key, id string, v []byte) error {
				return raw(true, func(tx *bolt.Tx) error {
					return tx.Bucket(store.ScheduleIndexBucket).Put(store.ScheduleIndexKey(key, id), v)
				})
			},
		}
	})
}
