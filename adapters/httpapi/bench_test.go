package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/parser"
)

func quietServe(b *testing.B, h core.Handler) string {
	ln, base := listen(b)
	s, err := New(Options{Listener: ln, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx, h) }()
	b.Cleanup(func() { cancel(); <-done })
	return base
}

// BenchmarkSinkToClient measures one event's way from the dispatcher's
// sink to the client having read its SSE frame, on an open stream.
func BenchmarkSinkToClient(b *testing.B) {
	sinks := make(chan func(...parser.Event), 1)
	base := quietServe(b, fakeHandler{handle: func(_ context.Context, m core.Message) { sinks <- m.Sink }})
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat", strings.NewReader(`{"conversation":"b","text":"x"}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	sink := <-sinks
	sse := newSSEReader(res.Body)
	ev := parser.Event{Type: parser.Text, Content: "a typical delta of text"}
	b.ResetTimer()
	for b.Loop() {
		sink(ev)
		if _, err := sse.next(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	sink(parser.Event{Type: parser.Done})
}

// BenchmarkChatStream measures whole requests: POST, 100 text events and
// done as fast as the sink takes them, the client reading to the end.
func BenchmarkChatStream(b *testing.B) {
	const events = 100
	base := quietServe(b, fakeHandler{handle: func(_ context.Context, m core.Message) {
		go func() {
			for range events {
				m.Sink(parser.Event{Type: parser.Text, Content: "a typical delta of text"})
			}
			m.Sink(parser.Event{Type: parser.Done, SessionID: "s"})
		}()
	}})
	b.ResetTimer()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat", strings.NewReader(`{"conversation":"b","text":"x"}`))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, res.Body); err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
	}
	b.ReportMetric(float64(b.N*(events+1))/b.Elapsed().Seconds(), "events/s")
}
