package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/golem-chat/golem/internal/retry"
)

// newPolicy is the adapter's retry policy: every 429's retry_after
// honoured, 5xx and network errors retried with backoff, an attempt bounded
// to 30 s.
func newPolicy(log *slog.Logger) retry.Policy {
	return retry.Policy{Platform: "discord", Log: log, Classify: verdict, AttemptTimeout: 30 * time.Second,
		MaxFailures: 5, FirstBackoff: 250 * time.Millisecond, MaxBackoff: 8 * time.Second}
}

// call runs one REST request that may be repeated without harm (an edit,
// a deferral, a thread start, typing) through discordgo under the retry
// policy; see request. what names the request in errors.
func (a *Adapter) call(ctx context.Context, channel, what string, f func(opts ...discordgo.RequestOption) error) error {
	return a.request(ctx, channel, retry.Call{Method: what, Idempotent: true}, f)
}

// request runs one REST request through discordgo under the retry policy,
// taking a slot of channel's budget before every attempt when channel is
// not empty (messages created or edited, threads started). discordgo's own
// 429 retry is off (it sleeps without a context and without bound), so this
// is the one place a request waits. Errors never carry a token.
func (a *Adapter) request(ctx context.Context, channel string, c retry.Call, f func(opts ...discordgo.RequestOption) error) error {
	if channel != "" {
		c.Before = func(ctx context.Context) (func(), error) {
			release, err := a.budget.acquire(ctx, channel)
			if err != nil {
				return nil, fmt.Errorf("wait for the channel's budget: %w", err)
			}
			return release, nil
		}
	}
	err := a.retry.Do(ctx, c, func(ctx context.Context) error { return redact(f(discordgo.WithContext(ctx))) })
	if err != nil {
		return fmt.Errorf("discord: %w", err)
	}
	return nil
}

// verdict reads a failed REST request for the retry policy.
func verdict(err error) retry.Verdict {
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) {
		return retry.Limited(rl.RetryAfter)
	}
	var rest *discordgo.RESTError
	if errors.As(err, &rest) {
		if rest.Response != nil && rest.Response.StatusCode >= 500 {
			return retry.Failed(fmt.Sprintf("http_%d", rest.Response.StatusCode))
		}
		return retry.Refused
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		if uerr.Timeout() {
			return retry.Failed("timeout")
		}
		return retry.Failed("network")
	}
	// discordgo answers a 502 with a plain error ("Exceeded Max retries
	// HTTP 502 ..."), as MaxRestRetries is 0.
	if strings.Contains(err.Error(), "HTTP 502") {
		return retry.Failed("http_502")
	}
	return retry.Refused // e.g. a JSON error: retrying will not help
}

// redact hides interaction tokens in the URL a network error or a 429
// carries (/webhooks/{app}/{token}, /interactions/{id}/{token}): errors end
// up in logs, and tokens never may.
func redact(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return &url.Error{Op: uerr.Op, URL: redactURL(uerr.URL), Err: uerr.Err}
	}
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) && rl.RateLimit != nil {
		return &discordgo.RateLimitError{RateLimit: &discordgo.RateLimit{TooManyRequests: rl.TooManyRequests, URL: redactURL(rl.URL)}}
	}
	return err
}

// redactURL replaces the token segment of webhook and interaction URLs and
// drops the query.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	parts := strings.Split(u.Path, "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "webhooks" || parts[i] == "interactions" {
			parts[i+2] = "REDACTED"
		}
	}
	u.Path, u.RawPath, u.RawQuery = strings.Join(parts, "/"), "", ""
	return u.String()
}

// apiCode returns the JSON error code of a REST error (50027 "Invalid
// Webhook Token", 50005 "Cannot edit a message authored by another user",
// ...) and its HTTP status; zeros when err is not a REST error.
func apiCode(err error) (code, status int) {
	var rest *discordgo.RESTError
	if !errors.As(err, &rest) {
		return 0, 0
	}
	if rest.Response != nil {
		status = rest.Response.StatusCode
	}
	if rest.Message != nil {
		code = rest.Message.Code
	}
	return code, status
}

// budget is a per-channel sliding window: a request may start when fewer
// than n requests of that channel are in flight or completed within the
// last per. Counting completion times (not start times) keeps it strict
// even when requests take a while: anything the server counted in its own
// window was counted here too.
type budget struct {
	n   int
	per time.Duration

	mu    sync.Mutex
	chans map[string]*channelBudget
}

type channelBudget struct {
	inflight int
	done     []time.Time // completion times within the window, oldest first
	wake     chan struct{}
}

func newBudget(n int, per time.Duration) *budget {
	return &budget{n: n, per: per, chans: map[string]*channelBudget{}}
}

// acquire blocks until a request may start on channel (or ctx ends) and
// returns the func to call when its response has arrived.
func (b *budget) acquire(ctx context.Context, channel string) (func(), error) {
	for {
		b.mu.Lock()
		c := b.chans[channel]
		if c == nil {
			if len(b.chans) > 1000 {
				b.prune()
			}
			c = &channelBudget{wake: make(chan struct{})}
			b.chans[channel] = c
		}
		now := time.Now()
		c.trim(now, b.per)
		if c.inflight+len(c.done) < b.n {
			c.inflight++
			b.mu.Unlock()
			return func() { b.release(c) }, nil
		}
		var t *time.Timer
		var timer <-chan time.Time
		if len(c.done) > 0 {
			t = time.NewTimer(c.done[0].Add(b.per).Sub(now))
			timer = t.C
		}
		wake := c.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-timer:
		case <-ctx.Done():
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

func (b *budget) release(c *channelBudget) {
	b.mu.Lock()
	c.inflight--
	c.done = append(c.done, time.Now())
	close(c.wake)
	c.wake = make(chan struct{})
	b.mu.Unlock()
}

func (c *channelBudget) trim(now time.Time, per time.Duration) {
	i := 0
	for i < len(c.done) && now.Sub(c.done[i]) >= per {
		i++
	}
	c.done = c.done[i:]
}

// prune forgets idle channels. Call with b.mu held.
func (b *budget) prune() {
	now := time.Now()
	for k, c := range b.chans {
		c.trim(now, b.per)
		if c.inflight == 0 && len(c.done) == 0 {
			delete(b.chans, k)
		}
	}
}

// rewrite sends requests for Discord's API host to another base URL (a
// proxy or a test fake) by rewriting scheme and host; discordgo's
// Endpoint* variables are fixed at start, so the transport is the one
// place to point it elsewhere. Other hosts (attachment CDNs) pass through.
type rewrite struct {
	base *url.URL
	next http.RoundTripper
}

func (t rewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != "discord.com" {
		return t.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = t.base.Scheme, t.base.Host, ""
	if p := strings.TrimSuffix(t.base.Path, "/"); p != "" {
		r.URL.Path = p + r.URL.Path
	}
	return t.next.RoundTrip(r)
}
