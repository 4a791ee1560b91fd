package store_test

import (
	"path/filepath"
	"testing"

	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/store/storetest"
)

// TestConformance runs the store suite against the bbolt backend.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func() (store.Store, error) {
		path := filepath.Join(t.TempDir(), "golem.db")
		return func() (store.Store, error) { return store.Open(path) }
	})
}
