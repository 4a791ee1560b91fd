package journal

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golem-chat/golem/store"
)

// BenchmarkKeepAndDone is what one waiting message costs (kept and saved,
// then struck and saved) in the bbolt store, with held messages already
// waiting: 0, and the bound less one. Messages are 2 KB, about a Slack
// payload with a file.
func BenchmarkKeepAndDone(b *testing.B) {
	pad := strings.Repeat("x", 2000)
	raw := func(id string) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"id":%q,"pad":%q}`, id, pad)) }
	for _, held := range []int{0, DefaultMax - 1} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			st, err := store.Open(filepath.Join(b.TempDir(), "golem.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			j := New(Options{Store: st, Key: "bench.pending", ID: idOf})
			for i := range held {
				j.Keep(fmt.Sprint("h", i), raw(fmt.Sprint("h", i)))
			}
			j.Save()
			r := raw("new")
			b.ResetTimer()
			for b.Loop() {
				if !j.Keep("new", r) {
					b.Fatal("refused under the bound")
				}
				j.Save()
				j.Done("new")
			}
		})
	}
}
