package engine

import (
	"encoding/json"
	"io"
	"os"
	"strconv"
	"testing"
)

// BenchmarkControlResponse is the engine's part of answering a permission
// request: encoding the control_response and writing it to the CLI's
// stdin (a pipe, drained as the CLI does). Rerun with
//
//	go test ./engine -run '^$' -bench ControlResponse
func BenchmarkControlResponse(b *testing.B) {
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	go io.Copy(io.Discard, r)
	c := newControl(w)
	defer c.close()
	input := json.RawMessage(`{"file_path":"/work/a.txt","content":"one\ntwo\n"}`)
	sugg := json.RawMessage(`[{"type":"setMode","mode":"acceptEdits","destination":"session"}]`)
	b.ReportAllocs()
	for i := range b.N {
		id := strconv.Itoa(i)
		c.mu.Lock()
		c.pending[id] = pendingRequest{input: input, suggestions: sugg}
		c.mu.Unlock()
		if err := c.answer(PermissionAnswer{ID: id, Decision: AllowSession}); err != nil {
			b.Fatal(err)
		}
	}
}
