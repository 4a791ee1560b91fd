// Package nettest holds network doubles for tests that drive a real SDK
// against a fake platform.
package nettest

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Stall is the network between golem and a fake platform, able to hold the
// requests whose URL path contains a pattern (a file download, a post)
// until the test releases them, as a slow download or a stalled platform
// would. A held request still ends when its context does. Safe for
// concurrent use.
type Stall struct {
	next    http.RoundTripper
	pattern string

	mu      sync.Mutex
	gate    chan struct{} // nil: nothing is held
	held    int           // requests that waited at a gate
	changed chan struct{} // receives after each held request arrives
}

// NewStall returns a Stall for the paths containing pattern; it holds
// nothing until Hold.
func NewStall(pattern string) *Stall {
	return &Stall{next: http.DefaultTransport, pattern: pattern, changed: make(chan struct{}, 1)}
}

// RoundTrip implements http.RoundTripper.
func (s *Stall) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.Contains(r.URL.Path, s.pattern) {
		s.mu.Lock()
		gate := s.gate
		if gate != nil {
			s.held++
		}
		s.mu.Unlock()
		if gate != nil {
			select {
			case s.changed <- struct{}{}:
			default:
			}
			select {
			case <-gate:
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
		}
	}
	return s.next.RoundTrip(r)
}

// Client is an HTTP client whose requests go through s.
func (s *Stall) Client() *http.Client { return &http.Client{Transport: s} }

// Hold makes matching requests wait from now on.
func (s *Stall) Hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate == nil {
		s.gate = make(chan struct{})
	}
}

// Release lets the held requests and later ones through.
func (s *Stall) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate != nil {
		close(s.gate)
		s.gate = nil
	}
}

// WaitHeld waits until n requests in all have been held, failing the test
// after 20 s.
func (s *Stall) WaitHeld(tb testing.TB, n int) {
	tb.Helper()
	deadline := time.After(20 * time.Second)
	for {
		s.mu.Lock()
		held := s.held
		s.mu.Unlock()
		if held >= n {
			return
		}
		select {
		case <-s.changed:
		case <-deadline:
			tb.Fatalf("nettest: %d requests held, want %d", held, n)
		}
	}
}
