package retry

import (
	"context"
	"log/slog"
	"time"
)

// Backoff paces a loop that tries again until its context ends rather
// than a bounded call (Policy.Do): connecting to a platform, long polling.
// Each Wait after a failure waits First, then twice as long each time up
// to Max, and logs the retry with the package's keys (method, attempt,
// retry_in_ms, reason, err); Reset after a success starts again from
// First. Not safe for concurrent use: one loop owns it.
type Backoff struct {
	First, Max time.Duration
	Log        *slog.Logger // nil logs nothing
	Method     string       // "getUpdates"

	attempt int
	next    time.Duration
}

// Wait logs msg for a failed attempt (reason as a Verdict names it, and
// err) and waits the next backoff, or until ctx ends, when it returns
// ctx's error.
func (b *Backoff) Wait(ctx context.Context, msg, reason string, err error) error {
	if b.next <= 0 {
		b.next = b.First
	}
	wait := b.next
	b.next = min(2*b.next, max(b.Max, b.First))
	b.attempt++
	if b.Log != nil {
		b.Log.Warn(msg, "method", b.Method, "attempt", b.attempt, "retry_in_ms", wait.Milliseconds(), "reason", reason, "err", err)
	}
	return Wait(ctx, wait)
}

// Attempts is how many failures Wait was told of since the last Reset.
func (b *Backoff) Attempts() int { return b.attempt }

// Reset starts the backoff again from First, after a success.
func (b *Backoff) Reset() { b.attempt, b.next = 0, 0 }
