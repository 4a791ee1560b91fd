// Package telegram connects golem to Telegram through the Bot API: long
// polling for updates, answers rendered as Telegram HTML and streamed by
// editing one message, tool activity as replies to the answer.
//
// It uses github.com/go-telegram-bot-api/telegram-bot-api/v5 for the
// connection and types; what that library predates (message_thread_id,
// sendMessageDraft, contexts, retry_after) the adapter does itself.
package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/golem-chat/golem/cluster"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/retry"
)

// DefaultAPIURL is Telegram's Bot API.
const DefaultAPIURL = "https://api.telegram.org"

// offsetKey is where the update offset is kept in Options.State.
const offsetKey = "telegram.offset"

// Options configure an Adapter.
type Options struct {
	Token  string // from BotFather
	APIURL string // default DefaultAPIURL; a local Bot API server or a fake
	Inbox  core.Inbox
	// State keeps the update offset across restarts; nil keeps it in
	// memory only (a restart then gets the unconfirmed updates again).
	// Replicas share it: each new leader reads the offset its
	// predecessor left.
	State core.StateStore
	// Replica, when set, is this golem among several replicas sharing
	// State: only the one that leads the "telegram" role polls, since the
	// Bot API serves one getUpdates per bot at a time. Every replica
	// sends. nil polls always (one golem).
	Replica cluster.Replica
	Logger  *slog.Logger
	// PollTimeout is the long-poll timeout of getUpdates; default 50s.
	PollTimeout time.Duration
	// HTTPClient makes every request; default a client without an
	// overall timeout (the adapter bounds each call itself).
	HTTPClient *http.Client
	// The flood budget every message call takes from (see budget); zero
	// values take the defaults that keep within Telegram's limits. A
	// chat's next call starts PrivateInterval (default 1.05s) after its
	// previous one was answered, GroupInterval (default 3.05s, under 20 a
	// minute) in a group; the bot makes GlobalPerSecond calls a second
	// (default 29) with bursts of GlobalBurst (default GlobalPerSecond-1).
	PrivateInterval time.Duration
	GroupInterval   time.Duration
	GlobalPerSecond float64
	GlobalBurst     int
	// Drafts enables Draft (sendMessageDraft, Bot API 9.5+, private chats
	// only). Default off: edits are the reliable way to stream.
	Drafts bool
	// Memory bounds the group messages kept for the chat context; zero
	// fields take DefaultMemory's.
	Memory Memory
	// MaxUpload is the largest file Upload takes, in bytes; default and at
	// most MaxUpload (what Telegram lets a bot send).
	MaxUpload int64

	callTimeout time.Duration // tests: bounds one attempt of a call; default callTimeout
}

// Adapter is the Telegram core.Adapter. Create it with New; Start runs
// the polling loop. Send, Edit and SendActivity may be called from many
// goroutines; they wait until Start has connected.
type Adapter struct {
	opts   Options
	log    *slog.Logger
	base   string
	client *http.Client
	budget *budget
	retry  retry.Policy

	seen   *seen  // the group messages seen, for History
	titles titles // the groups' titles, for the operator's view

	ready chan struct{} // closed once api and self are set
	api   caller
	self  tgbotapi.User
}

var (
	_ core.Adapter      = (*Adapter)(nil)
	_ core.Typist       = (*Adapter)(nil)
	_ core.Drafter      = (*Adapter)(nil)
	_ core.Uploader     = (*Adapter)(nil)
	_ core.LatestEditor = (*Adapter)(nil)
	_ core.Historian    = (*Adapter)(nil)
)

// ErrUnauthorized means Telegram refused the bot token.
var ErrUnauthorized = errors.New("telegram: the bot token was refused (check telegram.token)")

// New checks opts and returns an adapter; it does not connect yet.
func New(opts Options) (*Adapter, error) {
	if opts.Token == "" {
		return nil, errors.New("telegram: token is required")
	}
	if opts.APIURL == "" {
		opts.APIURL = DefaultAPIURL
	}
	if opts.MaxUpload <= 0 || opts.MaxUpload > MaxUpload {
		opts.MaxUpload = MaxUpload
	}
	if opts.PollTimeout <= 0 {
		opts.PollTimeout = 50 * time.Second
	}
	if opts.PrivateInterval <= 0 {
		opts.PrivateInterval = 1050 * time.Millisecond
	}
	if opts.GroupInterval <= 0 {
		opts.GroupInterval = 3050 * time.Millisecond
	}
	if opts.GlobalPerSecond <= 0 {
		opts.GlobalPerSecond = 29
	}
	if opts.GlobalBurst <= 0 {
		opts.GlobalBurst = max(1, int(opts.GlobalPerSecond)-1)
	}
	if opts.callTimeout <= 0 {
		opts.callTimeout = callTimeout
	}
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	log := logger(opts.Logger).With("platform", "telegram")
	return &Adapter{
		opts:   opts,
		log:    log,
		retry:  newPolicy(log, opts.callTimeout),
		base:   strings.TrimRight(opts.APIURL, "/"),
		client: client,
		budget: newBudget(opts.PrivateInterval, opts.GroupInterval, opts.GlobalPerSecond, opts.GlobalBurst),
		seen:   newSeen(opts.Memory),
		ready:  make(chan struct{}),
	}, nil
}

// Platform is "telegram".
func (a *Adapter) Platform() string { return "telegram" }

// Limits are Telegram's: 4,096 UTF-16 units of visible text (see Measure),
// about one message or edit a second per chat.
func (a *Adapter) Limits() core.Limits {
	return core.Limits{
		MaxLen:          4096,
		MinEditInterval: time.Second,
		MinPostInterval: time.Second,
		MaxUpload:       a.opts.MaxUpload,
	}
}

// Measure is the length Telegram counts for markdown once rendered: UTF-16
// code units of the text after entity parsing.
func (a *Adapter) Measure(markdown string) int { return measure(markdown) }

// commands is core's command list as setMyCommands takes it: the menu
// Telegram shows when a user types "/".
func commands() []tgbotapi.BotCommand {
	var out []tgbotapi.BotCommand
	for _, c := range core.Commands() {
		out = append(out, tgbotapi.BotCommand{Command: c.Name, Description: c.Summary})
	}
	return out
}

// Start connects (getMe, retried with backoff), registers the commands and
// polls for updates until ctx is done, delivering messages to h. With
// Options.Replica it polls only while this replica leads "telegram", and
// sends meanwhile all the same. It returns nil after ctx is cancelled (an
// in-flight poll is aborted, not waited out) and an error only when the
// token is refused.
func (a *Adapter) Start(ctx context.Context, h core.Handler) error {
	if err := a.connect(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	cmds, _ := json.Marshal(commands())
	if _, err := a.do(ctx, "setMyCommands", tgbotapi.Params{"commands": string(cmds)}); err != nil && ctx.Err() == nil {
		a.log.Warn("telegram: registering commands failed", "err", err)
	}
	if a.opts.Replica == nil {
		return a.poll(ctx, h)
	}
	// Each leadership polls afresh from the store: the offset and journal
	// the previous leader left. Its end (ctx) aborts the in-flight poll at
	// once, before another replica can lead.
	a.opts.Replica.Lead(ctx, "telegram", func(ctx context.Context) { _ = a.poll(ctx, h) })
	a.log.Info("telegram: stopped")
	return nil
}

func (a *Adapter) connect(ctx context.Context) error {
	backoff := retry.Backoff{First: firstBackoff, Max: maxBackoff, Log: a.log, Method: "getMe"}
	for {
		// The library calls getMe here; each call of botCaller gets its own
		// client, so cctx ends with this attempt.
		cctx, cancel := context.WithTimeout(ctx, a.opts.callTimeout)
		bot, err := tgbotapi.NewBotAPIWithClient(a.opts.Token, a.base+"/bot%s/%s", ctxClient{ctx: cctx, c: a.client})
		cancel()
		if err == nil {
			a.self = bot.Self
			a.api = &botCaller{bot: bot, client: a.client, token: a.opts.Token}
			close(a.ready)
			a.log.Info("telegram: connected", "bot", bot.Self.UserName)
			return nil
		}
		err = redact(err, a.opts.Token)
		if te, ok := apiError(err); ok && (te.Code == http.StatusUnauthorized || te.Code == http.StatusNotFound) {
			return ErrUnauthorized
		}
		if err := backoff.Wait(ctx, "telegram: connecting failed, retrying", verdict(err).Reason, err); err != nil {
			return err
		}
	}
}

// extra holds the update fields the library drops.
type extra struct {
	Message *struct {
		MessageThreadID int64 `json:"message_thread_id"`
		IsTopicMessage  bool  `json:"is_topic_message"`
		// Quote is the part of reply_to_message the reply quoted.
		Quote *struct {
			Text string `json:"text"`
		} `json:"quote"`
	} `json:"message"`
}

// thread is the forum topic the message is in; 0 outside topics (and in
// the General topic, whose messages carry none).
func (x extra) thread() int64 {
	if x.Message != nil && x.Message.IsTopicMessage {
		return x.Message.MessageThreadID
	}
	return 0
}

// poll runs getUpdates until ctx is done, handing each update to an intake,
// which passes its message on without holding the loop. The offset of the
// next update is saved after each update is taken, and after the intake's
// journal of updates not yet handed on, so a restart (or the next leader)
// neither loses nor repeats one (see updates): poll reads both from the
// store when it starts, and asks Telegram for no update past an offset the
// store does not hold. poll returns once every message being prepared has
// been handed on or set aside for the next start.
func (a *Adapter) poll(ctx context.Context, h core.Handler) error {
	offset := a.loadOffset()
	in := a.newUpdates(ctx, h)
	defer in.close()
	in.replay(offset)
	a.log.Info("telegram: polling", "offset", offset)
	backoff := retry.Backoff{First: firstBackoff, Max: maxBackoff, Log: a.log, Method: "getUpdates"}
	// A 409 is logged once per episode (see conflicts), not per retry.
	conflicts := conflicts{log: a.log, back: retry.Backoff{First: firstBackoff, Max: maxConflictBackoff}}
	saved := true // offset is in the store
	for ctx.Err() == nil {
		if !saved {
			if err := a.saveOffset(offset); err != nil {
				if backoff.Wait(ctx, "telegram: saving the update offset failed; not polling past it", "store", err) != nil {
					break
				}
				continue
			}
			saved = true
		}
		p := tgbotapi.Params{
			"timeout":         strconv.Itoa(int(a.opts.PollTimeout / time.Second)),
			"allowed_updates": `["message","callback_query"]`,
		}
		if offset != 0 {
			p["offset"] = strconv.FormatInt(offset, 10)
		}
		pctx, cancel := context.WithTimeout(ctx, a.opts.PollTimeout+15*time.Second)
		res, err := a.do(pctx, "getUpdates", p)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if te, ok := apiError(err); ok && te.Code == http.StatusConflict {
				if conflicts.wait(ctx, err) != nil {
					break
				}
				continue
			}
			if backoff.Wait(ctx, "telegram: polling failed, retrying", verdict(err).Reason, err) != nil {
				break
			}
			continue
		}
		conflicts.over()
		var raws []json.RawMessage
		if err := json.Unmarshal(res, &raws); err != nil {
			// Asking again at once would get the same answer.
			if backoff.Wait(ctx, "telegram: bad getUpdates answer, retrying", "bad_answer", err) != nil {
				break
			}
			continue
		}
		backoff.Reset()
		for _, raw := range raws {
			if ctx.Err() != nil {
				// No longer polling (another replica may lead): the rest
				// are not confirmed, so Telegram gives them to the next
				// poll.
				break
			}
			var head struct {
				UpdateID int64 `json:"update_id"`
			}
			if err := json.Unmarshal(raw, &head); err != nil {
				a.log.Error("telegram: an update without an id skipped", "err", err)
				continue
			}
			if in.take(head.UpdateID, raw) {
				in.save() // before the offset: polling past it confirms it to Telegram
			}
			// Confirmed even when it could not be decoded: otherwise
			// Telegram would send it again at once, forever.
			offset = head.UpdateID + 1
			if err := a.saveOffset(offset); err != nil {
				saved = false
			}
		}
	}
	a.log.Info("telegram: polling stopped", "offset", offset)
	return nil
}

// maxConflictBackoff bounds the wait after a 409 Conflict: the poller that
// took this one's place may stop at any time (a replica that lost its
// leadership does within moments).
const maxConflictBackoff = 5 * time.Second

// conflicts paces and logs a poll loop's 409 Conflicts: Telegram ended
// this replica's long poll because a newer getUpdates of the same bot took
// its place. Around a takeover between replicas that may happen once or
// twice; for longer, another golem (or another program) is polling with
// this bot's token outside the cluster. Owned by one poll loop.
type conflicts struct {
	log  *slog.Logger
	back retry.Backoff // logs nothing: wait logs once per episode
	n    int           // conflicts in this episode
	at   time.Time     // when the episode began
}

// wait notes a conflict, logs the first of an episode, and backs off.
func (c *conflicts) wait(ctx context.Context, err error) error {
	c.n++
	if c.n == 1 {
		c.at = time.Now()
		c.log.Warn("telegram: another getUpdates took this poll's place (409 Conflict); backing off. "+
			"Only one golem may poll a bot: if this lasts, another golem or program polls with this token",
			"err", err)
	} else {
		c.log.Debug("telegram: 409 Conflict again", "conflicts", c.n)
	}
	return c.back.Wait(ctx, "", "conflict", err)
}

// over ends an episode after a poll that succeeded.
func (c *conflicts) over() {
	if c.n == 0 {
		return
	}
	c.log.Info("telegram: polling again after 409 Conflicts", "conflicts", c.n, "duration_ms", time.Since(c.at).Milliseconds())
	c.n = 0
	c.back.Reset()
}

func (a *Adapter) loadOffset() int64 {
	if a.opts.State == nil {
		return 0
	}
	b, err := a.opts.State.Load(offsetKey)
	if err != nil {
		a.log.Error("telegram: loading the update offset failed", "err", err)
		return 0
	}
	n, _ := strconv.ParseInt(string(b), 10, 64)
	return n
}

func (a *Adapter) saveOffset(n int64) error {
	if a.opts.State == nil {
		return nil
	}
	if err := a.opts.State.Save(offsetKey, []byte(strconv.FormatInt(n, 10))); err != nil {
		return fmt.Errorf("telegram: save the update offset: %w", err)
	}
	return nil
}
