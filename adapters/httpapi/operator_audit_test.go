package httpapi

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/store/etcdstore"
)

// Two replicas' servers record the operator's actions on one conversation
// at once (each with its own client of the shared store): the audit keeps
// every one of them. On bbolt, two servers over one store do the same.
func TestAuditKeepsConcurrentEntries(t *testing.T) {
	const each = 15 // 30 in all, under maxAudit
	key := store.Key{Platform: "slack", Workspace: "T1", Channel: "C1"}
	run := func(t *testing.T, a, b store.State) {
		logs := []*auditLog{{st: a}, {st: b}}
		var wg sync.WaitGroup
		for r, l := range logs {
			for i := range each {
				wg.Go(func() {
					if err := l.add(key, auditEntry{At: time.Now(), By: core.Operator, Action: "stop", Result: fmt.Sprint(r, "/", i)}); err != nil {
						t.Error(err)
					}
				})
			}
		}
		wg.Wait()
		got, err := logs[0].read(key)
		if err != nil {
			t.Fatal(err)
		}
		results := map[string]bool{}
		for _, e := range got {
			results[e.Result] = true
		}
		if len(got) != 2*each || len(results) != 2*each {
			t.Errorf("the audit kept %d entries (%d distinct) of %d", len(got), len(results), 2*each)
		}
	}
	t.Run("etcd", func(t *testing.T) {
		ec := etcdtest.Start(t, 1)
		open := func() store.State {
			st, err := etcdstore.Open(etcdstore.Config{Endpoints: ec.Endpoints, Prefix: "golem"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
		run(t, open(), open())
	})
	t.Run("bbolt", func(t *testing.T) {
		st, err := store.Open(filepath.Join(t.TempDir(), "golem.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		run(t, st, st)
	})
}
