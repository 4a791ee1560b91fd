package retry

import "sync/atomic"

// Observer counts the platform calls that Do makes, for metrics: every
// attempt once, and every rate-limit answer once more. Its methods are
// called on the callers' goroutines and must not block. platform is
// Policy.Platform and method Call.Method: fixed names, never an id, a
// text or a token.
type Observer interface {
	// Called is told of every attempt, whatever its answer.
	Called(platform, method string)
	// RateLimited is told of every attempt the platform answered with a
	// rate limit (a 429, Telegram's retry_after).
	RateLimited(platform, method string)
}

// observer is the Observer that Do tells; nil tells none.
var observer atomic.Pointer[Observer]

// Observe makes o the Observer of every Policy in the process (there is
// one set of platform adapters per process, wired by cmd/bot); nil stops
// observing. It returns the Observer it replaces, so a test can restore it.
func Observe(o Observer) (previous Observer) {
	var old *Observer
	if o == nil {
		old = observer.Swap(nil)
	} else {
		old = observer.Swap(&o)
	}
	if old == nil {
		return nil
	}
	return *old
}

// observing returns the current Observer, or one that counts nothing.
func observing() Observer {
	if o := observer.Load(); o != nil {
		return *o
	}
	return nobody{}
}

type nobody struct{}

func (nobody) Called(string, string)      {}
func (nobody) RateLimited(string, string) {}
