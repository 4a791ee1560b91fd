// Package statetest is a core.StateStore in memory for tests, which the
// replicas of a test share as they share the etcd store.
package statetest

import "sync"

// State keeps values by key; Save of nil removes the key, as the stores
// do. The zero State is ready. Safe for concurrent use.
type State struct {
	mu sync.Mutex
	m  map[string][]byte
}

// Load returns the value saved under key, nil when there is none.
func (s *State) Load(key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key], nil
}

// Save stores a copy of v under key, or removes key when v is nil.
func (s *State) Save(key string, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v == nil {
		delete(s.m, key)
		return nil
	}
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[key] = append([]byte(nil), v...)
	return nil
}
