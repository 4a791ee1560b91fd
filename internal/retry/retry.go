// Package retry is the one retry policy of the platform adapters (Slack,
// Telegram, Discord). Each adapter keeps its own rate budgets and reads its
// own errors; this package decides when to try again and for how long:
//
//   - every attempt runs under a context of its own bounded by
//     Policy.AttemptTimeout, so one stalled connection costs one attempt, not
//     the answer;
//   - the adapter's Classify reads each failure as rate limited (wait what
//     the platform said, Retry-After), transient (a 5xx, a network failure,
//     a stalled attempt: back off exponentially with jitter, capped) or final;
//   - Call.Before runs before every attempt, the first and each retry, so a
//     retry takes a token of the adapter's rate budget like any call and never
//     jumps the queue;
//   - attempts are bounded (Policy.MaxAttempts in all, Policy.MaxFailures
//     transient ones) and so is the time spent retrying (Policy.MaxTotal);
//   - waits end with the caller's context (Wait is golem's one sleep, used
//     by core's reply streamer too);
//   - every retry is logged with the same keys on every platform: method,
//     attempt, retry_in_ms, reason, err.
//
// # Posting twice
//
// A post that failed with a 5xx, or whose attempt timed out or lost its
// connection after the request was written, may have landed. Repeating it
// could show the message twice, so a Call that creates something says how
// to find out (Call.Landed) or that repeating it is harmless (Call.Idempotent,
// e.g. an edit, or a create the platform deduplicates). With neither, an
// attempt that may have landed is not repeated: Do returns an error that
// wraps ErrMayHaveLanded and logs it. A failure before the request was
// written (a refused connection, a failed dial) and a rate-limit answer are
// always safe to repeat. The platforms decide as follows:
//
//   - Discord: a channel message is created with a nonce and enforce_nonce,
//     so Discord answers a repeat with the message already made: retried
//     freely. An interaction follow-up (a webhook, which takes no nonce) that
//     may have landed is not repeated.
//   - Slack: chat.postMessage has no idempotency key; after an attempt that
//     may have landed the adapter reads the channel (conversations.history)
//     or the thread (conversations.replies) back for its own message with the
//     same text posted since the attempt began, and repeats the post only if
//     there is none.
//   - Telegram: a bot cannot read a chat's history, so nothing tells whether
//     the message landed. The answer itself (Send) is repeated: a user would
//     rather see an answer twice than not at all, and golem's streamer could
//     not edit an answer it never got the id of. Tool activity
//     (SendActivity) is not repeated: a lost activity line costs less than a
//     duplicate in the thread, and the final answer is always delivered.
package retry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// Kind is how an adapter reads one failed attempt.
type Kind int

const (
	// Final failures are not repeated: the platform refused the call (a
	// 4xx, Slack's ok:false), or repeating it cannot help.
	Final Kind = iota
	// RateLimited failures are repeated after Verdict.Wait.
	RateLimited
	// Transient failures (a 5xx, a network failure, a stalled attempt) are
	// repeated after an exponential backoff with jitter.
	Transient
)

// Verdict is an adapter's reading of one failed attempt.
type Verdict struct {
	Kind Kind
	// Wait is what a rate-limit answer asked for (Retry-After); zero or
	// less waits Policy.FirstBackoff.
	Wait time.Duration
	// Reason is a short word for the log: "rate_limited", "http_503",
	// "network", "timeout".
	Reason string
}

// Limited is the verdict on a rate-limit answer asking to wait d.
func Limited(d time.Duration) Verdict {
	return Verdict{Kind: RateLimited, Wait: d, Reason: "rate_limited"}
}

// Failed is the verdict on a transient failure.
func Failed(reason string) Verdict { return Verdict{Kind: Transient, Reason: reason} }

// Refused is the verdict on a failure that repeating cannot mend.
var Refused = Verdict{Kind: Final, Reason: "final"}

// ErrMayHaveLanded is wrapped by the error of a call that was not repeated
// because its last attempt may have taken effect on the platform.
var ErrMayHaveLanded = errors.New("the request may have gone through; not repeated")

// ErrAttemptTimeout is the cause of an attempt's context ending at
// Policy.AttemptTimeout.
var ErrAttemptTimeout = errors.New("attempt timed out")

// Policy is an adapter's retry policy; its zero fields take the defaults
// noted. A Policy is read only and safe for concurrent use.
type Policy struct {
	// Platform names the platform ("slack") to the Observer.
	Platform string
	// Log receives one line per retry; it carries the platform.
	Log *slog.Logger
	// Classify reads a failed attempt's error. It is not called when the
	// caller's context has ended.
	Classify func(error) Verdict
	// AttemptTimeout bounds one attempt; default 30s.
	AttemptTimeout time.Duration
	// MaxAttempts bounds the attempts of one call, whatever failed;
	// default 12.
	MaxAttempts int
	// MaxFailures bounds the transient failures of one call; default 5.
	MaxFailures int
	// MaxTotal bounds the time from the first attempt to the start of the
	// last: a retry that would start later is not made; default 5m. Time
	// spent in Call.Before counts too.
	MaxTotal time.Duration
	// FirstBackoff is the backoff after the first transient failure,
	// doubling with each after it up to MaxBackoff; defaults 250ms and 8s.
	FirstBackoff, MaxBackoff time.Duration
}

// Call is one logical request.
type Call struct {
	// Method names the request in logs and errors: "chat.postMessage".
	Method string
	// Before runs before every attempt with the caller's context: where
	// the adapter takes a token of its rate budget. The returned func, if
	// any, runs when the attempt's answer is in. An error ends the call.
	Before func(ctx context.Context) (after func(), err error)
	// RateLimited, if set, is told of every rate-limit answer before the
	// wait (Slack pauses its workspace budget for everyone).
	RateLimited func(wait time.Duration)
	// Idempotent says that repeating an attempt that took effect does no
	// harm: an edit, a read, a create the platform deduplicates.
	Idempotent bool
	// RiskDuplicate repeats an attempt that may have landed although
	// nothing can tell: for a post whose loss costs more than showing it
	// twice (Telegram's answers, see the package doc). Each such repeat is
	// logged.
	RiskDuplicate bool
	// Landed, for a call that is not idempotent, finds out whether the
	// attempt begun at since took effect. It runs only after an attempt
	// that may have landed; found ends the call with success (the attempt
	// func should have kept what it needs, or Landed records it). An error
	// ends the call with ErrMayHaveLanded. Without Landed (and without
	// RiskDuplicate) such an attempt is not repeated.
	Landed func(ctx context.Context, since time.Time) (found bool, err error)
	// NoAttemptTimeout lifts Policy.AttemptTimeout for a request that
	// bounds itself (a long poll).
	NoAttemptTimeout bool
	// AttemptTimeout, when above zero, bounds each attempt instead of
	// Policy.AttemptTimeout: for a transfer of a file's bytes.
	AttemptTimeout time.Duration
}

func (p *Policy) defaults() Policy {
	q := *p
	if q.Log == nil {
		q.Log = slog.New(slog.DiscardHandler)
	}
	if q.Classify == nil {
		q.Classify = func(error) Verdict { return Refused }
	}
	if q.AttemptTimeout <= 0 {
		q.AttemptTimeout = 30 * time.Second
	}
	if q.MaxAttempts <= 0 {
		q.MaxAttempts = 12
	}
	if q.MaxFailures <= 0 {
		q.MaxFailures = 5
	}
	if q.MaxTotal <= 0 {
		q.MaxTotal = 5 * time.Minute
	}
	if q.FirstBackoff <= 0 {
		q.FirstBackoff = 250 * time.Millisecond
	}
	if q.MaxBackoff <= 0 {
		q.MaxBackoff = 8 * time.Second
	}
	return q
}

// Do runs attempt until it succeeds, fails for good, or the policy's
// bounds are reached. attempt gets a context of its own (bounded by
// AttemptTimeout) and must make its request with it: the context also
// tells Do whether the request was written. Errors name c.Method and wrap
// the last attempt's error (and ErrMayHaveLanded where that applies);
// when ctx ends, they wrap ctx's error.
func (p *Policy) Do(ctx context.Context, c Call, attempt func(ctx context.Context) error) error {
	q := p.defaults()
	start := time.Now()
	failures := 0
	for n := 1; ; n++ {
		var after func()
		if c.Before != nil {
			var err error
			if after, err = c.Before(ctx); err != nil {
				return fmt.Errorf("%s: %w", c.Method, err)
			}
		}
		began := time.Now()
		err, wrote := q.once(ctx, c, attempt)
		if after != nil {
			after()
		}
		obs := observing()
		obs.Called(q.Platform, c.Method)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			if errors.Is(err, ctx.Err()) {
				return fmt.Errorf("%s: %w", c.Method, err)
			}
			return fmt.Errorf("%s: %w: %w", c.Method, ctx.Err(), err)
		}
		v := q.Classify(err)
		if errors.Is(err, ErrAttemptTimeout) {
			v = Failed("timeout") // however the client reported it
		}
		var wait time.Duration
		switch v.Kind {
		case Final:
			return fmt.Errorf("%s: %w", c.Method, err)
		case RateLimited:
			obs.RateLimited(q.Platform, c.Method)
			wait = v.Wait
			if wait <= 0 {
				wait = q.FirstBackoff
			}
			wait += jitter(wait / 10) // never sooner than asked
			if c.RateLimited != nil {
				c.RateLimited(wait)
			}
		case Transient:
			switch {
			case !wrote || c.Idempotent:
			case c.RiskDuplicate:
				q.Log.Warn("repeating a request that may have gone through", "method", c.Method, "attempt", n, "reason", v.Reason, "err", err)
			default:
				if c.Landed == nil {
					q.Log.Warn("request may have gone through; not repeated", "method", c.Method, "attempt", n, "reason", v.Reason, "err", err)
					return fmt.Errorf("%s: %w: %w", c.Method, ErrMayHaveLanded, err)
				}
				found, lerr := c.Landed(ctx, began)
				if lerr != nil {
					q.Log.Warn("cannot tell whether a request went through; not repeated", "method", c.Method, "attempt", n, "reason", v.Reason, "err", err, "check_err", lerr)
					return fmt.Errorf("%s: %w: %w", c.Method, ErrMayHaveLanded, err)
				}
				if found {
					q.Log.Info("request went through despite the failure", "method", c.Method, "attempt", n, "reason", v.Reason, "err", err)
					return nil
				}
			}
			failures++
			if failures >= q.MaxFailures {
				return fmt.Errorf("%s: giving up after %d failures: %w", c.Method, failures, err)
			}
			d := min(q.FirstBackoff<<(failures-1), q.MaxBackoff)
			if d <= 0 { // shifted past the range
				d = q.MaxBackoff
			}
			wait = d/2 + jitter(d/2)
		}
		if n >= q.MaxAttempts {
			return fmt.Errorf("%s: giving up after %d attempts: %w", c.Method, n, err)
		}
		if time.Since(start)+wait > q.MaxTotal {
			return fmt.Errorf("%s: giving up: a retry in %v would pass %v: %w", c.Method, wait.Round(time.Millisecond), q.MaxTotal, err)
		}
		level := slog.LevelWarn
		if v.Kind == RateLimited {
			level = slog.LevelInfo
		}
		q.Log.Log(ctx, level, "retrying", "method", c.Method, "attempt", n, "retry_in_ms", wait.Milliseconds(), "reason", v.Reason, "err", err)
		if err := Wait(ctx, wait); err != nil {
			return fmt.Errorf("%s: %w", c.Method, err)
		}
	}
}

// once runs one attempt under its own context and reports whether its
// request was written (as far as an HTTP client traced it).
func (q *Policy) once(ctx context.Context, c Call, attempt func(context.Context) error) (err error, wrote bool) {
	actx, cancel := ctx, context.CancelFunc(func() {})
	limit := q.AttemptTimeout
	if c.AttemptTimeout > 0 {
		limit = c.AttemptTimeout
	}
	if !c.NoAttemptTimeout {
		actx, cancel = context.WithTimeoutCause(ctx, limit, ErrAttemptTimeout)
	}
	defer cancel()
	var written atomic.Bool
	actx = httptrace.WithClientTrace(actx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil { // a request cut short cannot have been acted on
				written.Store(true)
			}
		},
	})
	err = attempt(actx)
	if err != nil && ctx.Err() == nil && context.Cause(actx) == ErrAttemptTimeout && !errors.Is(err, ErrAttemptTimeout) {
		err = fmt.Errorf("%w after %v: %w", ErrAttemptTimeout, limit, err)
	}
	return err, written.Load()
}

func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

// Wait waits d, or until ctx ends, and returns ctx's error in that case.
// A d of zero or less returns at once (ctx's error, if it has ended).
func Wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
