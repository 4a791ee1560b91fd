package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/golem-chat/golem/internal/retry"
)

// caller is the one thing the adapter needs of the Bot API: call a method
// with raw form parameters and get its result. The library's BotAPI does
// it through MakeRequest, which also reaches methods the library predates
// (sendMessageDraft) and parameters it lacks (message_thread_id).
type caller interface {
	call(ctx context.Context, method string, p tgbotapi.Params) (json.RawMessage, error)
	// upload is call with files, as a multipart body.
	upload(ctx context.Context, method string, p tgbotapi.Params, files []tgbotapi.RequestFile) (json.RawMessage, error)
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

func (c *botCaller) upload(ctx context.Context, method string, p tgbotapi.Params, files []tgbotapi.RequestFile) (json.RawMessage, error) {
	b := *c.bot
	b.Client = ctxClient{ctx: ctx, c: c.client}
	resp, err := b.UploadFiles(method, p, files)
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

// callTimeout bounds one attempt of a call other than getUpdates (whose
// long poll has its own bound), so a connection that stalls is retried
// instead of holding up a conversation, or the poll loop, for good.
const callTimeout = time.Minute

// Backoff of the retry policy and of reconnecting: from firstBackoff,
// doubling, up to maxBackoff.
const (
	firstBackoff = 500 * time.Millisecond
	maxBackoff   = 30 * time.Second
)

// newPolicy is the adapter's retry policy: retry_after honoured on every
// 429 (up to 20 times), 5xx answers, network errors and stalled attempts
// retried with backoff (up to 6 failures); other API errors (400, 401, 403)
// are final.
func newPolicy(log *slog.Logger, attempt time.Duration) retry.Policy {
	return retry.Policy{Platform: "telegram", Log: log, Classify: verdict, AttemptTimeout: attempt,
		MaxAttempts: 26, MaxFailures: 6, FirstBackoff: firstBackoff, MaxBackoff: maxBackoff}
}

// verdict reads a failed call for the retry policy.
func verdict(err error) retry.Verdict {
	te, isAPI := apiError(err)
	switch {
	case isAPI && te.Code == http.StatusTooManyRequests:
		return retry.Limited(time.Duration(max(te.RetryAfter, 1)) * time.Second)
	case isAPI && te.Code >= 500:
		return retry.Failed(fmt.Sprintf("http_%d", te.Code))
	case isAPI:
		return retry.Refused
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return retry.Failed("timeout")
	}
	return retry.Failed("network")
}

// do calls method with no rate budget, repeating it after any transient
// failure: for calls that do no harm when repeated (getUpdates, getFile,
// setMyCommands, drafts).
func (a *Adapter) do(ctx context.Context, method string, p tgbotapi.Params) (json.RawMessage, error) {
	return a.doCall(ctx, retry.Call{Method: method, Idempotent: true}, p)
}

// doCall calls c.Method with p under the adapter's retry policy (c.Before
// takes the rate budget before every attempt). Errors wrap the library's
// *tgbotapi.Error and never carry the token.
func (a *Adapter) doCall(ctx context.Context, c retry.Call, p tgbotapi.Params) (json.RawMessage, error) {
	api, err := a.connected(ctx)
	if err != nil {
		return nil, err
	}
	c.NoAttemptTimeout = c.Method == "getUpdates" // the long poll bounds itself
	var res json.RawMessage
	err = a.retry.Do(ctx, c, func(ctx context.Context) error {
		var err error
		res, err = api.call(ctx, c.Method, p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	return res, nil
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
