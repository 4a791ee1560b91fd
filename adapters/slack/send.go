package slack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"
	"golang.org/x/time/rate"

	"github.com/golem-chat/golem/core"
)

// Send posts text as a new message in to.Channel: in the thread to.Thread
// when set, else in a thread opened on to.ReplyTo when to.StartThread asks
// for one, else at the top of the channel. It waits for the channel's
// posting pace first.
func (a *Adapter) Send(ctx context.Context, to core.Place, text string) (core.MessageRef, error) {
	thread := to.Thread
	if thread == "" && to.StartThread {
		thread = to.ReplyTo
	}
	ts, err := a.post(ctx, to.Channel, thread, text)
	if err != nil {
		return core.MessageRef{}, fmt.Errorf("slack: post an answer: %w", err)
	}
	return core.MessageRef{Channel: to.Channel, Thread: thread, ID: ts}, nil
}

// SendActivity posts text in the answer's thread: the thread the answer is
// in, or the thread started on the answer itself.
func (a *Adapter) SendActivity(ctx context.Context, answer core.MessageRef, text string) error {
	thread := answer.Thread
	if thread == "" {
		thread = answer.ID
	}
	if _, err := a.post(ctx, answer.Channel, thread, text); err != nil {
		return fmt.Errorf("slack: post tool activity: %w", err)
	}
	return nil
}

// Edit replaces the text of msg. It blocks until the workspace's shared
// chat.update budget allows the call, which is how a busy workspace slows
// the reply streamers down (they coalesce meanwhile).
func (a *Adapter) Edit(ctx context.Context, msg core.MessageRef, text string) error {
	return a.EditLatest(ctx, msg, func() string { return text })
}

// EditLatest implements core.LatestEditor: it waits for the workspace's
// chat.update budget first and only then takes the text, so an answer that
// waited its turn shows what the agent has written by now.
func (a *Adapter) EditLatest(ctx context.Context, msg core.MessageRef, latest func() string) error {
	err := a.do(ctx, "chat.update", func(ctx context.Context) error {
		if err := a.updates.wait(ctx); err != nil {
			return err
		}
		_, _, _, err := a.api.UpdateMessageContext(ctx, msg.Channel, msg.ID,
			slackapi.MsgOptionText(render(latest()), false))
		return err
	})
	if err != nil {
		return fmt.Errorf("slack: edit an answer: %w", err)
	}
	return nil
}

// Typing adds the working reaction to the message a turn answers and
// removes it when the returned func is called. Neither waits for Slack.
func (a *Adapter) Typing(ctx context.Context, on core.Message) (stop func()) {
	name := a.opts.WorkingReaction
	if name == "-" || on.ID == "" || on.Channel == "" {
		return func() {}
	}
	item := slackapi.NewRefToMessage(on.Channel, on.ID)
	bg := context.WithoutCancel(ctx)
	added := make(chan bool, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg, 30*time.Second)
		defer cancel()
		err := a.do(ctx, "reactions.add", func(ctx context.Context) error {
			return a.api.AddReactionContext(ctx, name, item)
		})
		if err != nil {
			a.log.Debug("slack: add the working reaction", "err", err)
		}
		added <- err == nil
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			go func() {
				if !<-added {
					return
				}
				ctx, cancel := context.WithTimeout(bg, 30*time.Second)
				defer cancel()
				err := a.do(ctx, "reactions.remove", func(ctx context.Context) error {
					return a.api.RemoveReactionContext(ctx, name, item)
				})
				if err != nil {
					a.log.Debug("slack: remove the working reaction", "err", err)
				}
			}()
		})
	}
}

// post sends one chat.postMessage at the channel's pace and returns its ts.
func (a *Adapter) post(ctx context.Context, channel, thread, text string) (string, error) {
	rendered := render(text)
	opts := []slackapi.MsgOption{slackapi.MsgOptionText(rendered, false),
		slackapi.MsgOptionDisableLinkUnfurl(), slackapi.MsgOptionDisableMediaUnfurl()}
	if thread != "" {
		opts = append(opts, slackapi.MsgOptionTS(thread))
	}
	var ts string
	err := a.do(ctx, "chat.postMessage", func(ctx context.Context) error {
		if err := a.posts.wait(ctx, channel); err != nil {
			return err
		}
		var err error
		_, ts, err = a.api.PostMessageContext(ctx, channel, opts...)
		return err
	})
	return ts, err
}

// render is Mrkdwn, never empty (Slack refuses an empty text).
func render(markdown string) string {
	if s := Mrkdwn(markdown); s != "" {
		return s
	}
	return "…"
}

// Retry bounds: a rate-limited call is retried after each Retry-After up
// to maxRateLimited times; a 5xx or network failure up to maxFailures
// times with exponential backoff.
const (
	maxRateLimited = 10
	maxFailures    = 5
	firstBackoff   = 250 * time.Millisecond // tests shorten Adapter.firstBackoff
	maxBackoff     = 8 * time.Second
)

// do runs call, honouring Retry-After on 429 (for chat.update it also
// pauses the shared budget, since the limit is the workspace's) and
// retrying 5xx and network failures with backoff. Other errors (Slack's
// ok:false answers) return at once.
func (a *Adapter) do(ctx context.Context, method string, call func(context.Context) error) error {
	limited, failed := 0, 0
	backoff := a.firstBackoff
	for {
		err := call(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
		var wait time.Duration
		if rl, ok := errors.AsType[*slackapi.RateLimitedError](err); ok {
			limited++
			if limited > maxRateLimited {
				return fmt.Errorf("%s: still rate limited after %d tries: %w", method, limited, err)
			}
			wait = rl.RetryAfter
			if method == "chat.update" {
				a.updates.pause(wait)
			}
			a.log.Warn("slack: rate limited", "method", method, "retry_after_ms", wait.Milliseconds())
		} else if retryable(err) {
			failed++
			if failed > maxFailures {
				return fmt.Errorf("%s: failed %d times: %w", method, failed, err)
			}
			wait, backoff = backoff, min(2*backoff, maxBackoff)
			a.log.Warn("slack: call failed; retrying", "method", method, "err", err, "backoff_ms", wait.Milliseconds())
		} else {
			return fmt.Errorf("%s: %w", method, err)
		}
		if err := sleep(ctx, wait); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
	}
}

// retryable reports whether a failed call may succeed when repeated: a 5xx
// answer, a transient Slack error, or a network failure.
func retryable(err error) bool {
	if sc, ok := errors.AsType[slackapi.StatusCodeError](err); ok {
		return sc.Code >= 500
	}
	if se, ok := errors.AsType[slackapi.SlackErrorResponse](err); ok {
		switch se.Err {
		case "internal_error", "fatal_error", "service_unavailable", "request_timeout":
			return true
		}
		return false
	}
	_, isNet := errors.AsType[net.Error](err)
	return isNet
}

func sleep(ctx context.Context, d time.Duration) error {
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

// budget is a workspace-wide call budget: a token bucket that never spends
// more than perMinute calls in any minute (burst at once, the rest spread
// out), paused for everyone when Slack answers 429 anyway.
type budget struct {
	lim *rate.Limiter

	mu     sync.Mutex
	paused time.Time
}

func newBudget(perMinute, burst int) *budget {
	burst = min(burst, perMinute/2)
	burst = max(burst, 1)
	// A token bucket spends at most burst + rate*60s in a minute; the
	// extra second keeps us under Slack's count despite network jitter.
	every := 61 * time.Second / time.Duration(max(perMinute-burst, 1))
	return &budget{lim: rate.NewLimiter(rate.Every(every), burst)}
}

// wait blocks until one call may go or ctx ends.
func (b *budget) wait(ctx context.Context) error {
	for {
		b.mu.Lock()
		until := b.paused
		b.mu.Unlock()
		if err := sleep(ctx, time.Until(until)); err != nil {
			return err
		}
		if err := b.lim.Wait(ctx); err != nil {
			return err
		}
		b.mu.Lock()
		paused := time.Now().Before(b.paused)
		b.mu.Unlock()
		if !paused {
			return nil
		}
	}
}

// pause holds every caller for d.
func (b *budget) pause(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if until := time.Now().Add(d); until.After(b.paused) {
		b.paused = until
	}
}

// channelPace paces posts per channel.
type channelPace struct {
	every time.Duration
	burst int

	mu   sync.Mutex
	lims map[string]*rate.Limiter
}

func newChannelPace(every time.Duration, burst int) *channelPace {
	return &channelPace{every: every, burst: burst, lims: map[string]*rate.Limiter{}}
}

// wait blocks until a post to channel may go or ctx ends.
func (p *channelPace) wait(ctx context.Context, channel string) error {
	p.mu.Lock()
	lim, ok := p.lims[channel]
	if !ok {
		if len(p.lims) > 10000 { // forget idle channels now and then
			for ch, l := range p.lims {
				if l.Tokens() >= float64(p.burst) {
					delete(p.lims, ch)
				}
			}
		}
		lim = rate.NewLimiter(rate.Every(p.every), p.burst)
		p.lims[channel] = lim
	}
	p.mu.Unlock()
	return lim.Wait(ctx)
}
