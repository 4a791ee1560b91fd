// Package slack connects golem to Slack over Socket Mode with slack-go: it
// turns app mentions, direct messages and the /golem slash command into
// core.Message values, and posts and edits the answers, rendered as mrkdwn,
// within Slack's rate limits (a workspace-wide chat.update budget, about one
// post per second per channel, Retry-After honoured on every call).
package slack

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/golem-chat/golem/cluster"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/intake"
	"github.com/golem-chat/golem/internal/journal"
	"github.com/golem-chat/golem/internal/namecache"
	"github.com/golem-chat/golem/internal/retry"
)

// Options configure an Adapter. The config keys of bot.yaml are noted.
type Options struct {
	BotToken string // slack.bot_token, "xoxb-..."
	AppToken string // slack.app_token, "xapp-...", with connections:write
	// APIURL is the Slack base URL (slack.api_url); the Web API is at
	// APIURL+"/api/". Empty: Slack itself. A URL already ending in /api/
	// is taken as is.
	APIURL string
	// Inbox is where attachments are saved; an empty Dir refuses them.
	Inbox  core.Inbox
	Logger *slog.Logger
	// UpdatesPerMinute is the chat.update budget shared by every answer in
	// the workspace (Slack's Tier 3); default 50. UpdateBurst (default 3)
	// of them may go at once; the adapter never spends more than
	// UpdatesPerMinute in any minute.
	UpdatesPerMinute int
	UpdateBurst      int
	// PostInterval is the pace of chat.postMessage per channel; default 1s.
	PostInterval time.Duration
	// WorkingReaction is the emoji added to a message while its turn runs;
	// default "hourglass_flowing_sand"; "-" turns it off.
	WorkingReaction string
	// MaxUpload is the largest file Upload takes, in bytes; default and at
	// most MaxUpload (Slack's 1 GB).
	MaxUpload int64
	// State keeps, across restarts, the messages acked to Slack but not yet
	// handed on (see internal/journal), under JournalKey (default
	// "slack.pending"); nil keeps them in memory only, so a kill loses
	// those. Replicas sharing a store each need a key of their own.
	State      core.StateStore
	JournalKey string
	// Replica, when set, is this golem among replicas: its Socket Mode
	// connection is open only while the replica is in the cluster, so that
	// Slack sends the app's events to the other replicas' connections
	// while this one cannot keep them.
	Replica cluster.Replica
	// JournalOf, with Replica, is another replica's JournalKey: every
	// AdoptEvery the adapter hands on what the replicas gone from the
	// cluster left in theirs (killed while a file was downloading).
	JournalOf func(replica string) string
	// Streaming is how an answer grows (slack.streaming): StreamEdits
	// (default) posts it and redraws it with chat.update; StreamNative
	// streams it as a thread reply with chat.startStream, appendStream and
	// stopStream (see stream.go).
	Streaming string
	// ToolActivity is where, with StreamNative, each tool call shows
	// (slack.tool_activity): ActivityReplies (default) posts it as a reply
	// in the answer's thread, as with edits; ActivityTasks makes it a task
	// card inside the streamed answer (task_update chunks, timeline).
	ToolActivity string
	// SuggestedPrompts (slack.suggested_prompts, at most four) are set on
	// every thread of the app's split view as it opens.
	SuggestedPrompts []Prompt
	// StatusRefresh is how often, with StreamNative, the thread's status
	// line ("is running `go test ./...`") is set again while a tool runs,
	// before Slack clears it (two minutes); default 90 s.
	StatusRefresh time.Duration
	// HTTPClient is used for every Web API call and file transfer;
	// default a client that gives up on an answer not begun within 30 s
	// of the request. Besides, one attempt of a Web API call is bounded to
	// 30 s and one of a file transfer to 30 minutes.
	HTTPClient *http.Client
}

// webAPI is the part of slack-go's client the adapter uses.
type webAPI interface {
	AuthTestContext(ctx context.Context) (*slackapi.AuthTestResponse, error)
	PostMessageContext(ctx context.Context, channel string, opts ...slackapi.MsgOption) (string, string, error)
	UpdateMessageContext(ctx context.Context, channel, ts string, opts ...slackapi.MsgOption) (string, string, string, error)
	PostEphemeralContext(ctx context.Context, channel, user string, opts ...slackapi.MsgOption) (string, error)
	AddReactionContext(ctx context.Context, name string, item slackapi.ItemRef) error
	StartStreamContext(ctx context.Context, channel string, opts ...slackapi.MsgOption) (string, string, error)
	AppendStreamContext(ctx context.Context, channel, ts string, opts ...slackapi.MsgOption) (string, string, error)
	StopStreamContext(ctx context.Context, channel, ts string, opts ...slackapi.MsgOption) (string, string, error)
	RemoveReactionContext(ctx context.Context, name string, item slackapi.ItemRef) error
	SetAssistantThreadsStatusContext(ctx context.Context, params slackapi.AssistantThreadsSetStatusParameters) error
	SetAssistantThreadsTitleContext(ctx context.Context, params slackapi.AssistantThreadsSetTitleParameters) error
	SetAssistantThreadsSuggestedPromptsContext(ctx context.Context, params slackapi.AssistantThreadsSetSuggestedPromptsParameters) error
	GetFileInfoContext(ctx context.Context, id string, count, page int) (*slackapi.File, []slackapi.Comment, *slackapi.Paging, error)
	GetFileContext(ctx context.Context, url string, w io.Writer) error
	GetConversationHistoryContext(ctx context.Context, params *slackapi.GetConversationHistoryParameters) (*slackapi.GetConversationHistoryResponse, error)
	GetConversationRepliesContext(ctx context.Context, params *slackapi.GetConversationRepliesParameters) ([]slackapi.Message, bool, string, error)
	GetUserInfoContext(ctx context.Context, user string, options ...slackapi.GetUserInfoOption) (*slackapi.User, error)
	GetConversationInfoContext(ctx context.Context, input *slackapi.GetConversationInfoInput) (*slackapi.Channel, error)
	GetUploadURLExternalContext(ctx context.Context, params slackapi.GetUploadURLExternalParameters) (*slackapi.GetUploadURLExternalResponse, error)
	UploadToURL(ctx context.Context, params slackapi.UploadToURLParameters) error
	CompleteUploadExternalContext(ctx context.Context, params slackapi.CompleteUploadExternalParameters) (*slackapi.CompleteUploadExternalResponse, error)
}

// Adapter is the Slack platform. Send, Edit, SendActivity and Typing are
// safe for concurrent use; Start runs once.
type Adapter struct {
	opts   Options
	log    *slog.Logger
	client *slackapi.Client
	api    webAPI

	updates *budget // chat.update, workspace-wide

	// Native streaming: Tier 2 for starts and stops, Tier 4 for appends.
	streamStarts, streamStops, appends *budget
	posts                              *channelPace
	retry                              retry.Policy // tests shorten its backoff

	mu          sync.Mutex
	botUser     string // the bot's user id, "U..."
	botID       string // the bot's bot id, "B..."
	botUserName string // the bot's user name, as auth.test tells it

	users userNames // display names for the chat context
	// channels are channels' names for the operator's view (ChannelName).
	channels *namecache.Cache

	// in hands messages on in their channel's order; made by Start, used
	// from Start's goroutine.
	in *intake.Intake
	// journal keeps the messages acked but not yet handed on; made by Start.
	journal *journal.Journal

	posted map[string]string // per channel: the latest ts the bot posted; guarded by mu

	// Guarded by mu, used with Streaming native: the open streams by
	// channel/ts, who sent each message by channel/ts, and the answers
	// (channel/ts of the message answered) whose stream did not start.
	streams map[string]*stream
	latest  map[string]string // per answer (channel/ts answered): the ts of its newest stream
	askers  threadMap[asker]
	refused threadMap[bool]
	// reserved are the answers (channel/ts answered) that took their
	// stream's start when their turn began (see thinking).
	reserved threadMap[bool]
	// statuses are the threads' status lines golem set, by channel/thread;
	// threads the split view's threads by channel/thread. Guarded by mu.
	statuses threadMap[*threadStatus]
	threads  threadMap[*assistantThread]
	// statusCalls is the assistant.threads.setStatus budget.
	statusCalls *budget
}

var (
	_ core.Adapter      = (*Adapter)(nil)
	_ core.Typist       = (*Adapter)(nil)
	_ core.LatestEditor = (*Adapter)(nil)
	_ core.Uploader     = (*Adapter)(nil)
	_ core.Ender        = (*Adapter)(nil)
	_ core.Stepper      = (*Adapter)(nil)
)

// New checks opts and returns an adapter; it connects in Start.
func New(opts Options) (*Adapter, error) {
	if !strings.HasPrefix(opts.BotToken, "xoxb-") {
		return nil, errors.New("slack: bot_token must be a bot token (xoxb-...)")
	}
	if !strings.HasPrefix(opts.AppToken, "xapp-") {
		return nil, errors.New("slack: app_token must be an app-level token (xapp-...) for Socket Mode")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.UpdatesPerMinute <= 0 {
		opts.UpdatesPerMinute = 50
	}
	if opts.UpdateBurst <= 0 {
		opts.UpdateBurst = 3
	}
	if opts.PostInterval <= 0 {
		opts.PostInterval = time.Second
	}
	if opts.MaxUpload <= 0 || opts.MaxUpload > MaxUpload {
		opts.MaxUpload = MaxUpload
	}
	if err := (Config{Streaming: opts.Streaming, ToolActivity: opts.ToolActivity, SuggestedPrompts: opts.SuggestedPrompts}).Validate(); err != nil {
		return nil, err
	}
	opts.Streaming = cmp.Or(opts.Streaming, StreamEdits)
	opts.ToolActivity = cmp.Or(opts.ToolActivity, ActivityReplies)
	if opts.StatusRefresh <= 0 {
		opts.StatusRefresh = 90 * time.Second
	}
	if opts.WorkingReaction == "" {
		opts.WorkingReaction = "hourglass_flowing_sand"
	}
	sopts := []slackapi.Option{slackapi.OptionAppLevelToken(opts.AppToken)}
	if opts.APIURL != "" {
		sopts = append(sopts, slackapi.OptionAPIURL(apiURL(opts.APIURL)))
	}
	if opts.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = 30 * time.Second
		opts.HTTPClient = &http.Client{Transport: tr}
	}
	sopts = append(sopts, slackapi.OptionHTTPClient(opts.HTTPClient))
	client := slackapi.New(opts.BotToken, sopts...)
	log := opts.Logger.With("platform", "slack")
	a := &Adapter{
		opts:    opts,
		log:     log,
		client:  client,
		api:     client,
		updates: newBudget(opts.UpdatesPerMinute, opts.UpdateBurst),
		posts:   newChannelPace(opts.PostInterval, 3),
		posted:  map[string]string{},
		retry:   newPolicy(log),

		streamStarts: newBudget(18, 9),
		streamStops:  newBudget(18, 9),
		appends:      newBudget(90, 5),
		streams:      map[string]*stream{},
		latest:       map[string]string{},
		askers:       newThreadMap[asker](maxThreads),
		refused:      newThreadMap[bool](maxThreads),
		reserved:     newThreadMap[bool](maxThreads),
		statuses:     newThreadMap[*threadStatus](maxThreads),
		threads:      newThreadMap[*assistantThread](maxThreads),
		statusCalls:  newBudget(180, 20),
	}
	a.channels = namecache.New(namecache.Options{Lookup: a.channelName})
	return a, nil
}

// apiURL turns a base URL into slack-go's API URL, ending in "/api/".
func apiURL(base string) string {
	base = strings.TrimRight(base, "/")
	if strings.HasSuffix(base, "/api") {
		return base + "/"
	}
	return base + "/api/"
}

// Platform is "slack".
func (a *Adapter) Platform() string { return "slack" }

// Limits are Slack's: answers under 4,000 characters of mrkdwn, an edit a
// second per message at most, and a post a second per channel.
func (a *Adapter) Limits() core.Limits {
	if a.opts.Streaming == StreamNative {
		return core.Limits{MaxLen: MaxStreamLen - 100, MinEditInterval: time.Second, MinPostInterval: time.Second, MaxUpload: a.opts.MaxUpload}
	}
	return core.Limits{MaxLen: 3900, MinEditInterval: time.Second, MinPostInterval: time.Second, MaxUpload: a.opts.MaxUpload}
}

// Measure is the length of markdown once rendered as mrkdwn, in runes.
func (a *Adapter) Measure(markdown string) int {
	if a.opts.Streaming == StreamNative {
		return measureNative(markdown)
	}
	return utf8.RuneCountInString(Mrkdwn(markdown))
}

// Start learns the bot's identity with auth.test, then connects Socket Mode
// and delivers messages to h until ctx is done; slack-go reconnects after a
// dropped socket or a disconnect request. Every envelope is acked as soon
// as its message is safe, before any slow work: handed to h (whose Handle
// keeps it and returns) in its channel's order (see inOrder), or, when it
// cannot be handed on at once, journaled. The journal of the last run is
// handed on before the socket opens. With Options.Replica the socket is
// open only while the replica is in the cluster. Start returns nil after ctx ends and
// an error when the tokens are refused, once every message still being
// prepared has been handed on or dropped.
func (a *Adapter) Start(ctx context.Context, h core.Handler) error {
	auth, err := a.authenticate(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	a.mu.Lock()
	a.botUser, a.botID, a.botUserName = auth.UserID, auth.BotID, auth.User
	a.mu.Unlock()
	a.log.Info("slack: authenticated", "team", auth.TeamID, "bot_user", auth.UserID)

	key := cmp.Or(a.opts.JournalKey, pendingKey)
	a.journal = journal.New(journal.Options{Store: a.opts.State, Key: key, ID: eventID, Logger: a.log})
	a.in = intake.New(a.journal, func() (core.Handler, context.Context) { return h, ctx })
	defer a.in.Close()
	a.replay(ctx, h)
	if a.opts.Replica == nil {
		return a.listen(ctx, ctx, h)
	}
	var refused error
	serve, stop := context.WithCancel(ctx)
	defer stop()
	a.opts.Replica.Serve(serve, func(member context.Context) {
		if refused = a.listen(ctx, member, h); refused != nil {
			stop()
		} else if ctx.Err() == nil {
			a.log.Warn("slack: socket closed while this replica is out of the cluster; Slack sends the app's events to the other replicas")
		}
	})
	return refused
}

// AdoptEvery is how often a replica looks for the journals of replicas
// gone from the cluster.
const AdoptEvery = 10 * time.Second

// listen runs Socket Mode until conn ends, handing what it brings to h
// under ctx; an error when the tokens are refused.
func (a *Adapter) listen(ctx, conn context.Context, h core.Handler) error {
	a.adoptGone(ctx, h)
	adopt := time.NewTicker(AdoptEvery)
	defer adopt.Stop()
	backoff := retry.Backoff{First: time.Second, Max: time.Minute, Log: a.log, Method: "apps.connections.open"}
	for {
		flapping, err := a.connection(ctx, conn, h, adopt.C)
		if !flapping {
			return err
		}
		if backoff.Wait(conn, "slack: Slack closes the socket as soon as it opens (an app may hold 10: too_many_websockets?); waiting before the next",
			"closed at once", nil) != nil {
			return nil
		}
	}
}

// A socket Slack closes as soon as it opens is given up after
// flapsBeforeWait such reopenings, each within flapWithin of the last:
// slack-go reopens it at once, forever (past 10 connections for an app
// Slack says too_many_websockets, which slack-go does not pass on).
const (
	flapWithin      = 2 * time.Second
	flapsBeforeWait = 3
)

// connection runs one Socket Mode client until conn ends (nil), the
// tokens are refused (an error) or Slack keeps closing it as soon as it
// opens (flapping).
func (a *Adapter) connection(ctx, conn context.Context, h core.Handler, adopt <-chan time.Time) (flapping bool, err error) {
	sctx, cancel := context.WithCancel(conn)
	defer cancel()
	sm := socketmode.New(a.client,
		socketmode.OptionLog(slog.NewLogLogger(a.log.Handler(), slog.LevelDebug)))
	runErr := make(chan error, 1)
	go func() { runErr <- sm.RunContext(sctx) }()
	var last time.Time
	flaps := 0
	for {
		select {
		case ev := <-sm.Events:
			if ev.Type == socketmode.EventTypeConnected {
				if !last.IsZero() && time.Since(last) < flapWithin {
					flaps++
				} else {
					flaps = 0
				}
				last = time.Now()
				if flaps >= flapsBeforeWait {
					cancel()
					drain(sm.Events, runErr)
					return true, nil
				}
			}
			a.onSocketEvent(ctx, sm, h, ev)
		case <-adopt:
			a.adoptGone(ctx, h)
		case err := <-runErr:
			if sctx.Err() != nil {
				return false, nil
			}
			return false, fmt.Errorf("slack: socket mode: %w", err)
		}
	}
}

// drain reads what a cancelled Socket Mode client still sends until its
// run has returned, so that it is never blocked on a send.
func drain(events <-chan socketmode.Event, done <-chan error) {
	for {
		select {
		case <-events:
		case <-done:
			return
		}
	}
}

// authenticate calls auth.test until it answers, waiting out network
// failures and 5xx (Slack may be unreachable when golem starts); a refused
// token ends it at once.
func (a *Adapter) authenticate(ctx context.Context) (*slackapi.AuthTestResponse, error) {
	backoff := retry.Backoff{First: a.retry.FirstBackoff, Max: time.Minute, Log: a.log, Method: "auth.test"}
	for {
		var auth *slackapi.AuthTestResponse
		err := a.do(ctx, "auth.test", func(ctx context.Context) (err error) {
			auth, err = a.api.AuthTestContext(ctx)
			return err
		})
		if err == nil {
			return auth, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		v := verdict(err)
		if v.Kind == retry.Final {
			return nil, fmt.Errorf("slack: check the bot token: %w", err)
		}
		if err := backoff.Wait(ctx, "slack: cannot reach Slack; retrying", v.Reason, err); err != nil {
			return nil, err
		}
	}
}

// onSocketEvent hands what an envelope carries on and acks it: a message
// once Handle has kept it, or once it is journaled when it must wait
// before it reaches the handler (see inOrder); anything else at once. It runs on Start's goroutine and must
// not block on slow work.
func (a *Adapter) onSocketEvent(ctx context.Context, sm *socketmode.Client, h core.Handler, ev socketmode.Event) {
	acked := false
	ack := func() {
		if acked || ev.Request == nil || ev.Request.EnvelopeID == "" {
			return
		}
		acked = true
		if err := sm.AckCtx(ctx, ev.Request.EnvelopeID, nil); err != nil {
			a.log.Warn("slack: ack an envelope", "type", ev.Type, "err", err)
		}
	}
	defer ack()
	if ev.Type != socketmode.EventTypeEventsAPI && ev.Type != socketmode.EventTypeSlashCommand {
		ack()
	}
	switch ev.Type {
	case socketmode.EventTypeConnected:
		if c, ok := ev.Data.(*socketmode.ConnectedEvent); ok {
			a.log.Info("slack: socket connected", "connection", c.ConnectionCount+1)
		}
	case socketmode.EventTypeConnectionError:
		a.log.Warn("slack: socket connection failed; retrying", "err", ev.Data)
	case socketmode.EventTypeEventsAPI:
		a.onEventsAPI(ctx, h, ev, ack)
	case socketmode.EventTypeInteractive:
		a.onInteractive(ctx, h, ev)
	case socketmode.EventTypeSlashCommand:
		if cmd, ok := ev.Data.(slackapi.SlashCommand); ok {
			if m, ok := a.fromSlashCommand(cmd); ok {
				var raw json.RawMessage
				if ev.Request != nil {
					raw = ev.Request.Payload
				}
				a.inOrder(ctx, h, m, nil, raw, ack)
			}
		}
	}
}

// botIdentity returns the bot's user id and bot id learned in Start.
func (a *Adapter) botIdentity() (user, bot string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.botUser, a.botID
}
