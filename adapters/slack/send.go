package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"
	"golang.org/x/time/rate"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/retry"
)

// Send posts text as a new message in to.Channel: in the thread to.Thread
// when set, else in a thread opened on to.ReplyTo when to.StartThread asks
// for one, else at the top of the channel. It waits for the channel's
// posting pace first.
func (a *Adapter) Send(ctx context.Context, to core.Place, text string) (core.MessageRef, error) {
	if a.opts.Streaming == StreamNative {
		if ref, ok, err := a.startStream(ctx, to, text); ok {
			return ref, err
		}
	}
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
	if _, err := a.post(ctx, answer.Channel, thread, text, slackapi.MsgOptionMetadata(activityMetadata)); err != nil {
		return fmt.Errorf("slack: post tool activity: %w", err)
	}
	a.keepStatus(ctx, answer.Channel, thread)
	return nil
}

// activityMetadata marks the bot's tool-activity posts, so that reading
// the thread back (History) tells them from its answers.
var activityMetadata = slackapi.SlackMetadata{EventType: "golem_tool_activity", EventPayload: map[string]any{}}

// Edit replaces the text of msg. It blocks until the workspace's shared
// chat.update budget allows the call, which is how a busy workspace slows
// the reply streamers down (they coalesce meanwhile).
func (a *Adapter) Edit(ctx context.Context, msg core.MessageRef, text string) error {
	if a.holdFinal(msg, text) {
		return nil
	}
	return a.EditLatest(ctx, msg, func() string { return text })
}

// EditLatest implements core.LatestEditor: it waits for the workspace's
// chat.update budget first and only then takes the text, so an answer that
// waited its turn shows what the agent has written by now.
func (a *Adapter) EditLatest(ctx context.Context, msg core.MessageRef, latest func() string) error {
	if st := a.streamOf(msg); st != nil {
		if grown, err := a.growStream(ctx, msg, st, latest); grown || err != nil {
			return err
		}
	}
	call := retry.Call{Method: "chat.update", Idempotent: true, RateLimited: a.updates.pause,
		Before: func(ctx context.Context) (func(), error) { return nil, a.updates.wait(ctx) }}
	update := func(ctx context.Context) error {
		_, _, _, err := a.api.UpdateMessageContext(ctx, msg.Channel, msg.ID,
			slackapi.MsgOptionText(render(latest()), false))
		return err
	}
	err := a.retry.Do(ctx, call, update)
	if isCode(err, "streaming_state_conflict") {
		// Still streaming after all (a stop that failed): stop it and
		// update again.
		if serr := a.stopStream(ctx, msg, &stream{open: true}); serr == nil {
			err = a.retry.Do(ctx, call, update)
		}
	}
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
	if stop, ok := a.thinking(ctx, on); ok {
		return stop
	}
	item := slackapi.NewRefToMessage(on.Channel, on.ID)
	bg := context.WithoutCancel(ctx)
	added := make(chan bool, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg, 30*time.Second)
		defer cancel()
		err := a.do(ctx, "reactions.add", func(ctx context.Context) error {
			// A repeat of an add that failed late but landed finds the
			// reaction there: it is added, and is removed at stop.
			return slackOK(a.api.AddReactionContext(ctx, name, item), "already_reacted")
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
					return slackOK(a.api.RemoveReactionContext(ctx, name, item), "no_reaction")
				})
				if err != nil {
					a.log.Debug("slack: remove the working reaction", "err", err)
				}
			}()
		})
	}
}

// slackOK is err, or nil when it is Slack's ok:false answer code, which
// says that what was asked for holds already.
func slackOK(err error, code string) error {
	if se, ok := errors.AsType[slackapi.SlackErrorResponse](err); ok && se.Err == code {
		return nil
	}
	return err
}

// post sends one chat.postMessage at the channel's pace and returns its ts.
// chat.postMessage has no idempotency key: when an attempt fails in a way
// that may have posted anyway (a 5xx, a stalled answer), the channel or
// thread is read back first and the post is repeated only if it did not
// land (see the retry package).
func (a *Adapter) post(ctx context.Context, channel, thread, text string, extra ...slackapi.MsgOption) (string, error) {
	rendered := render(text)
	opts := append([]slackapi.MsgOption{slackapi.MsgOptionText(rendered, false),
		slackapi.MsgOptionDisableLinkUnfurl(), slackapi.MsgOptionDisableMediaUnfurl()}, extra...)
	if thread != "" {
		opts = append(opts, slackapi.MsgOptionTS(thread))
	}
	var ts string
	call := retry.Call{Method: "chat.postMessage",
		Before: func(ctx context.Context) (func(), error) { return nil, a.posts.wait(ctx, channel) },
		Landed: func(ctx context.Context, since time.Time) (bool, error) {
			found, err := a.findPost(ctx, channel, thread, rendered, since)
			ts = found
			return found != "", err
		},
	}
	err := a.retry.Do(ctx, call, func(ctx context.Context) error {
		var err error
		_, ts, err = a.api.PostMessageContext(ctx, channel, opts...)
		return err
	})
	if err == nil {
		a.notePost(channel, ts)
	}
	return ts, err
}

// notePost remembers ts as the latest post known in channel, so that a
// search for a post that may have landed does not take an earlier one with
// the same text for it.
func (a *Adapter) notePost(channel, ts string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.posted) > 10000 {
		clear(a.posted)
	}
	if last, ok := a.posted[channel]; !ok || tsAfter(ts, last) {
		a.posted[channel] = ts
	}
}

// clockSlack widens the search for a post that may have landed: Slack's
// timestamps are Slack's clock, the attempt's start is ours.
const clockSlack = 2 * time.Second

// findPost returns the ts of the bot's message in channel (in thread, when
// set) whose text is text, posted since the given time (less clockSlack)
// and after the latest post the adapter knows in channel, or "" when there
// is none. It reads the thread with conversations.replies or the channel
// with conversations.history.
func (a *Adapter) findPost(ctx context.Context, channel, thread, text string, since time.Time) (string, error) {
	user, bot := a.botIdentity()
	if user == "" && bot == "" {
		return "", errors.New("the bot's identity is not known yet")
	}
	from := since.Add(-clockSlack)
	oldest := fmt.Sprintf("%d.%06d", from.Unix(), from.Nanosecond()/1000)
	a.mu.Lock()
	if last, ok := a.posted[channel]; ok && tsAfter(last, oldest) {
		oldest = last
	}
	a.mu.Unlock()
	var msgs []slackapi.Message
	var err error
	if thread != "" {
		err = a.do(ctx, "conversations.replies", func(ctx context.Context) error {
			var err error
			msgs, _, _, err = a.api.GetConversationRepliesContext(ctx, &slackapi.GetConversationRepliesParameters{
				ChannelID: channel, Timestamp: thread, Oldest: oldest, Limit: 200})
			return err
		})
	} else {
		err = a.do(ctx, "conversations.history", func(ctx context.Context) error {
			res, err := a.api.GetConversationHistoryContext(ctx, &slackapi.GetConversationHistoryParameters{
				ChannelID: channel, Oldest: oldest, Limit: 200})
			if err == nil {
				msgs = res.Messages
			}
			return err
		})
	}
	if err != nil {
		return "", err
	}
	found := ""
	for _, m := range msgs {
		mine := (bot != "" && m.BotID == bot) || (user != "" && m.User == user)
		inPlace := m.ThreadTimestamp == thread || (thread == "" && m.ThreadTimestamp == m.Timestamp)
		if thread != "" && m.Timestamp == thread {
			inPlace = false // the thread's parent
		}
		if mine && inPlace && m.Text == text && (found == "" || tsAfter(m.Timestamp, found)) {
			found = m.Timestamp
		}
	}
	return found, nil
}

// tsAfter reports whether Slack timestamp x is later than y.
func tsAfter(x, y string) bool {
	xs, xf, _ := strings.Cut(x, ".")
	ys, yf, _ := strings.Cut(y, ".")
	if len(xs) != len(ys) {
		return len(xs) > len(ys)
	}
	if xs != ys {
		return xs > ys
	}
	return xf > yf
}

// render is Mrkdwn, never empty (Slack refuses an empty text).
func render(markdown string) string {
	if s := Mrkdwn(markdown); s != "" {
		return s
	}
	return "…"
}

// maxFailures bounds the 5xx and network failures of one Web API call.
const maxFailures = 5

// newPolicy is the adapter's retry policy: Retry-After honoured on every
// 429, 5xx and network failures retried with backoff, an attempt bounded
// to 30 s. Slack's ok:false answers are final but for its few transient
// error codes.
func newPolicy(log *slog.Logger) retry.Policy {
	return retry.Policy{Platform: "slack", Log: log, Classify: verdict, AttemptTimeout: 30 * time.Second,
		MaxFailures: maxFailures, FirstBackoff: 250 * time.Millisecond, MaxBackoff: 8 * time.Second}
}

// do runs an idempotent Web API call (a read, a reaction, a transfer)
// under the adapter's retry policy, with no rate budget.
func (a *Adapter) do(ctx context.Context, method string, call func(context.Context) error) error {
	c := retry.Call{Method: method, Idempotent: true}
	if method == "files.download" || method == "files.upload" {
		c.AttemptTimeout = transferTimeout
	}
	return a.retry.Do(ctx, c, call)
}

// transferTimeout bounds one attempt to move a file's bytes, which may
// take much longer than a Web API call's 30 s; a stalled transfer is cut
// sooner by the HTTP client (Options.HTTPClient) when no answer begins.
const transferTimeout = 30 * time.Minute

// verdict reads a failed Web API call for the retry policy.
func verdict(err error) retry.Verdict {
	if rl, ok := errors.AsType[*slackapi.RateLimitedError](err); ok {
		return retry.Limited(rl.RetryAfter)
	}
	if sc, ok := errors.AsType[slackapi.StatusCodeError](err); ok {
		if sc.Code >= 500 {
			return retry.Failed(fmt.Sprintf("http_%d", sc.Code))
		}
		return retry.Refused
	}
	if se, ok := errors.AsType[slackapi.SlackErrorResponse](err); ok {
		switch se.Err {
		case "internal_error", "fatal_error", "service_unavailable", "request_timeout":
			return retry.Failed(se.Err)
		}
		return retry.Refused
	}
	if ne, ok := errors.AsType[net.Error](err); ok {
		if ne.Timeout() {
			return retry.Failed("timeout")
		}
		return retry.Failed("network")
	}
	return retry.Refused
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
		if err := retry.Wait(ctx, time.Until(until)); err != nil {
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

// take spends one call if one may go now, without waiting.
func (b *budget) take() bool {
	b.mu.Lock()
	paused := time.Now().Before(b.paused)
	b.mu.Unlock()
	return !paused && b.lim.Allow()
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
