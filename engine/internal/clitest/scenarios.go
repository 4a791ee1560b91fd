package clitest

import (
	"sort"
	"sync"
)

// Scenarios is what every fake model API keeps: the responder of each
// scenario (a test picks one through the first path segment of the base
// URL it gives the CLI), every request received, and the requests it did
// not know. It is safe for concurrent use; the zero value is empty and
// ready.
type Scenarios[Req, Rep any] struct {
	mu         sync.Mutex
	responders map[string]func(*Req) Rep
	requests   []*Req
	unexpected []string
}

// Set sets (or replaces) the responder of scenario name.
func (s *Scenarios[Req, Rep]) Set(name string, respond func(*Req) Rep) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.responders == nil {
		s.responders = map[string]func(*Req) Rep{}
	}
	s.responders[name] = respond
}

// Take records req and returns the responder of its scenario, if known.
func (s *Scenarios[Req, Rep]) Take(req *Req, scenario string) (func(*Req) Rep, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	respond, ok := s.responders[scenario]
	return respond, ok
}

// Requests returns the recorded requests that keep accepts, in arrival
// order.
func (s *Scenarios[Req, Rep]) Requests(keep func(*Req) bool) []*Req {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Req
	for _, r := range s.requests {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// Miss notes a request the fake did not know ("METHOD /path").
func (s *Scenarios[Req, Rep]) Miss(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unexpected = append(s.unexpected, what)
}

// Unexpected lists the requests Miss noted.
func (s *Scenarios[Req, Rep]) Unexpected() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.unexpected...)
}

// Names lists the scenarios that have a responder, sorted.
func (s *Scenarios[Req, Rep]) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.responders))
	for n := range s.responders {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
