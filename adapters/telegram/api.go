package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// caller is the one thing the adapter needs of the Bot API: call a method
// with raw form parameters and get its result. The library's BotAPI does
// it through MakeRequest, which also reaches methods the library predates
// (sendMessageDraft) and parameters it lacks (message_thread_id).
type caller interface {
	call(ctx context.Context, method string, p tgbotapi.Params) (json.RawMessage, error)
}

// botCaller calls through the library. The library takes no context, so
// each call runs on a copy of the BotAPI whose HTTP client binds the
// call's context to the request: cancelling it aborts a long poll at once.
type botCaller struct {
	bot    *tgbotapi.BotAPI
	client *http.Client
	token  string
}

func (c *botCaller) call(ctx context.Context, method string, p tgbotapi.Params) (json.RawMessage, error) {
	b := *c.bot
	b.Client = ctxClient{ctx: ctx, c: c.client}
	resp, err := b.MakeRequest(method, p)
	if err != nil {
		return nil, redact(err, c.token)
	}
	return resp.Result, nil
}

// ctxClient is a tgbotapi.HTTPClient that sends every request under ctx.
type ctxClient struct {
	ctx context.Context
	c   *http.Client
}

func (c ctxClient) Do(r *http.Request) (*http.Response, error) { return c.c.Do(r.WithContext(c.ctx)) }

// redact removes the bot token from an error (a *url.Error names the
// request URL, which holds the token), so no log line ever carries it.
func redact(err error, token string) error {
	var ue *url.Error
	if token != "" && errors.As(err, &ue) {
		cp := *ue
		cp.URL = strings.ReplaceAll(cp.URL, token, "<token>")
		return &cp
	}
	return err
}

// apiError is the Bot API's error answer, as the library reports it.
func apiError(err error) (*tgbotapi.Error, bool) {
	var te *tgbotapi.Error
	if errors.As(err, &te) {
		return te, true
	}
	return nil, false
}

func isParseError(err error) bool {
	te, ok := apiError(err)
	return ok && te.Code == 400 && strings.Contains(te.Message, "can't parse entities")
}

func isNotModified(err error) bool {
	te, ok := apiError(err)
	return ok && te.Code == 400 && strings.Contains(te.Message, "message is not modified")
}

// Retry bounds: a 429 is retried after its retry_after up to maxRateWaits
// times; a 5xx or network error up to maxAttempts times with exponential
// backoff from firstBackoff, capped at maxBackoff.
const (
	maxRateWaits = 20
	maxAttempts  = 6
	firstBackoff = 500 * time.Millisecond
	maxBackoff   = 30 * time.Second
)

// callTimeout bounds one attempt of a call other than getUpdates (whose
// long poll has its own bound), so a connection that stalls is retried
// instead of holding up a conversation, or the poll loop, for good.
const callTimeout = time.Minute

// do calls method, honouring retry_after on every 429 and retrying 5xx
// answers, network errors and stalled attempts with backoff; other API
// errors (400, 401, 403) return at once. Errors wrap the library's
// *tgbotapi.Error.
func (a *Adapter) do(ctx context.Context, method string, p tgbotapi.Params) (json.RawMessage, error) {
	api, err := a.connected(ctx)
	if err != nil {
		return nil, err
	}
	backoff := firstBackoff
	rateWaits, failures := 0, 0
	for {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if method != "getUpdates" {
			actx, cancel = context.WithTimeout(ctx, a.opts.callTimeout)
		}
		res, err := api.call(actx, method, p)
		cancel()
		if err == nil {
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("telegram: %s: %w", method, ctx.Err())
		}
		var wait time.Duration
		te, isAPI := apiError(err)
		switch {
		case isAPI && te.Code == http.StatusTooManyRequests:
			rateWaits++
			if rateWaits > maxRateWaits {
				return nil, fmt.Errorf("telegram: %s: still rate limited after %d waits: %w", method, maxRateWaits, err)
			}
			wait = time.Duration(max(te.RetryAfter, 1)) * time.Second
			a.log.Warn("telegram: rate limited", "method", method, "retry_after_s", te.RetryAfter)
		case !isAPI || te.Code >= 500:
			failures++
			if failures >= maxAttempts {
				return nil, fmt.Errorf("telegram: %s: giving up after %d attempts: %w", method, failures, err)
			}
			wait, backoff = backoff, min(2*backoff, maxBackoff)
			a.log.Warn("telegram: call failed, retrying", "method", method, "err", err, "retry_in", wait)
		default:
			return nil, fmt.Errorf("telegram: %s: %w", method, err)
		}
		if err := sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("telegram: %s: %w", method, err)
		}
	}
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// connected waits until Start has reached the Bot API (the adapter learns
// its own username from getMe) and returns the caller.
func (a *Adapter) connected(ctx context.Context) (caller, error) {
	select {
	case <-a.ready:
		return a.api, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("telegram: not connected: %w", ctx.Err())
	}
}

// logger returns l or a logger that drops everything.
func logger(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}
