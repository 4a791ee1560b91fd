package slacktest

import (
	"context"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// rawConn is a Socket Mode connection read by hand, to ack or not at will.
type rawConn struct {
	c   *websocket.Conn
	got chan map[string]any
}

func dial(t *testing.T, s *Server) *rawConn {
	t.Helper()
	_, url, err := client(s, AppToken).StartSocketModeContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	r := &rawConn{c: c, got: make(chan map[string]any, 100)}
	go func() {
		defer close(r.got)
		for {
			var m map[string]any
			if c.ReadJSON(&m) != nil {
				return
			}
			r.got <- m
		}
	}()
	if m := r.next(t); m["type"] != "hello" {
		t.Fatalf("first message %v, want hello", m)
	}
	return r
}

func (r *rawConn) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case m, ok := <-r.got:
		if !ok {
			return nil
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("nothing came on the socket")
		return nil
	}
}

func (r *rawConn) ack(t *testing.T, m map[string]any) {
	t.Helper()
	if err := r.c.WriteJSON(map[string]any{"envelope_id": m["envelope_id"]}); err != nil {
		t.Fatal(err)
	}
}

// An app's events are spread over its open connections, and one not
// acked comes again, later, on another connection, with retry_attempt one
// higher: a replica that took an event and died before acking it loses
// nothing as long as another replica is connected.
func TestEventsSpreadAndUnackedComeAgainElsewhere(t *testing.T) {
	s := New(Options{AckTimeout: 300 * time.Millisecond})
	defer s.Close()
	a, b := dial(t, s), dial(t, s)

	first, err := s.Deliver(Event{User: "U1", Channel: "C1", Text: "one"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Deliver(Event{User: "U1", Channel: "C1", Text: "two"})
	if err != nil {
		t.Fatal(err)
	}
	ma, mb := a.next(t), b.next(t)
	if ma["envelope_id"] != first.EnvelopeID || mb["envelope_id"] != second.EnvelopeID {
		t.Fatalf("envelopes went to %v and %v, want one on each connection", ma["envelope_id"], mb["envelope_id"])
	}
	b.ack(t, mb) // a never acks its envelope

	again := b.next(t)
	payload, _ := again["payload"].(map[string]any)
	if payload["event_id"] != first.EventID || again["retry_attempt"] != float64(1) || again["retry_reason"] != "timeout" {
		t.Fatalf("redelivery on the other connection = %v", again)
	}
	b.ack(t, again)
	time.Sleep(3 * 300 * time.Millisecond) // an acked event is not sent again
	for _, p := range s.Pushes() {
		if p.EventID == second.EventID && p.RetryAttempt > 0 {
			t.Fatalf("the acked event was sent again: %+v", p)
		}
		if p.EventID == first.EventID && p.RetryAttempt > 1 {
			t.Fatalf("the event acked on its retry was sent again: %+v", p)
		}
	}
}

// An event nobody acks is sent MaxRetries times more, then dropped, as
// Slack gives up.
func TestUnackedEventGivenUpAfterThreeRetries(t *testing.T) {
	s := New(Options{AckTimeout: 100 * time.Millisecond})
	defer s.Close()
	a := dial(t, s)
	d, err := s.Deliver(Event{User: "U1", Channel: "C1", Text: "one"})
	if err != nil {
		t.Fatal(err)
	}
	for want := range MaxRetries + 1 {
		m := a.next(t)
		if m["retry_attempt"] != float64(want) {
			t.Fatalf("delivery %d: retry_attempt %v", want, m["retry_attempt"])
		}
	}
	time.Sleep(300 * time.Millisecond)
	n := 0
	for _, p := range s.Pushes() {
		if p.EventID == d.EventID {
			n++
		}
	}
	if n != MaxRetries+1 {
		t.Fatalf("%d deliveries of one event, want %d", n, MaxRetries+1)
	}
}

// One connection more than Slack allows is told too_many_websockets and
// closed; the others go on.
func TestTooManyWebsockets(t *testing.T) {
	s := New(Options{MaxConnections: 2, AckTimeout: -1})
	defer s.Close()
	a, b := dial(t, s), dial(t, s)
	_, url, err := client(s, AppToken).StartSocketModeContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	var m map[string]any
	if err := c.ReadJSON(&m); err != nil || m["type"] != "disconnect" || m["reason"] != "too_many_websockets" {
		t.Fatalf("third connection got %v, %v", m, err)
	}
	if err := c.ReadJSON(&m); err == nil {
		t.Fatalf("the refused connection stayed open: %v", m)
	}
	if s.Refused() != 1 || s.Open() != 2 {
		t.Fatalf("refused %d, open %d", s.Refused(), s.Open())
	}
	for _, r := range []*rawConn{a, b} { // the two allowed connections still take events
		if _, err := s.Deliver(Event{User: "U1", Channel: "C1", Text: "still"}); err != nil {
			t.Fatal(err)
		}
		if m := r.next(t); m["type"] != "events_api" {
			t.Fatalf("got %v, want an event", m)
		}
	}
}
