// Package discord connects golem to Discord through a bot: slash commands
// (/ask, /new, /stop, /status, /engine, /model, /help) and @mentions in
// guild channels, and direct messages. An answer to /ask is the
// interaction's deferred response, grown by webhook edits while the
// interaction token lives and by bot-token channel messages after; tool
// activity goes to a thread started on the answer (replies in DMs). As a
// core.Historian it tells a turn what was said before its message: the
// chain of replies and the messages since the bot's last answer.
//
// It uses github.com/bwmarrin/discordgo for REST, pointed at
// Options.APIURL by an HTTP transport that rewrites Discord's host, and its
// types for the gateway's events; the gateway connection itself (resume,
// heartbeat, reconnect) is the adapter's own, see gateway.go.
package discord

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/golem-chat/golem/cluster"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/intake"
	"github.com/golem-chat/golem/internal/journal"
	"github.com/golem-chat/golem/internal/namecache"
	"github.com/golem-chat/golem/internal/relay"
	"github.com/golem-chat/golem/internal/retry"
)

// Options configure an Adapter. Token is required; the rest have defaults.
type Options struct {
	Token  string   // the bot token, without "Bot "
	APIURL string   // Discord's base URL; default DefaultAPIURL (the API is under /api/v9)
	Guilds []string // register slash commands in these guilds (instant); empty: globally
	Inbox  core.Inbox
	Logger *slog.Logger
	// State keeps, across restarts, the messages taken from the gateway
	// but not yet handed on (see internal/journal), under
	// JournalKey (default "discord.pending"); nil keeps them in memory
	// only, so a kill loses those. Replicas sharing a store each need a
	// key of their own.
	State      core.StateStore
	JournalKey string
	// Replica, when set, is this golem among replicas: it holds the
	// gateway only while it leads "discord", and keeps the gateway session
	// in State (see leader.go), so that the next leader resumes it and
	// gets again every event Discord sent meanwhile.
	Replica cluster.Replica
	// JournalOf, with Replica, is another replica's JournalKey: a new
	// leader hands on what the replicas gone from the cluster left in
	// theirs (killed while an attachment was downloading).
	JournalOf func(replica string) string

	// ChannelLimit requests per ChannelWindow may create or edit messages
	// in one channel (edits included); default 5 per 5 s, Discord's
	// per-channel budget. Send, Edit and SendActivity block until allowed.
	ChannelLimit  int
	ChannelWindow time.Duration
	// TokenLife is how long an interaction token can edit its response;
	// default 15 minutes. After it (less a small margin) the answer goes on
	// with bot-token channel messages.
	TokenLife time.Duration
	// MaxUpload is the largest file Upload takes, in bytes; default and at
	// most MaxUpload (what a server without boosts takes).
	MaxUpload int64
}

// Adapter is the Discord platform adapter. Create it with New.
type Adapter struct {
	opts    Options
	log     *slog.Logger
	session *discordgo.Session
	budget  *budget
	retry   retry.Policy
	http    *http.Client // for attachment downloads

	dialer       *websocket.Dialer
	gatewayRetry retry.Policy
	// identifyWait bounds the wait before a fresh IDENTIFY after Discord
	// ended the session: a random 1/5 of it to all of it (1 to 5 s).
	identifyWait time.Duration
	// flapWait is the first wait before connecting again after a
	// connection that dropped right after its handshake (see runGateway).
	flapWait time.Duration

	mu           sync.Mutex
	handler      core.Handler
	life         context.Context
	started      bool
	stopped      bool
	botID        string
	appID        string
	interactions map[string]*interaction // by interaction id
	sent         map[string]*sentMessage // interaction messages and their replacements, by message id
	threads      map[string]string       // answer message id -> activity thread id
	flat         map[string]bool         // channels where no thread can be started: DMs, threads
	names        *namecache.Cache        // channels' names for the operator's view

	in *intake.Intake // hands messages on in their channel's order
	// clicks answers the clicks on questions off the gateway's goroutine,
	// in order per clicked message.
	clicks *relay.Relay[string, click]
	// journal keeps the messages taken but not yet handed on; replayed
	// once, at the first READY.
	journal  *journal.Journal
	replayed sync.Once
	saver    *sessionSaver // the leader's, among replicas; guarded by mu

	asked asked     // the gateway's objects of messages handed on, for History
	nicks nicknames // the guild nicknames of the authors the gateway showed
}

var (
	_ core.Adapter        = (*Adapter)(nil)
	_ core.Typist         = (*Adapter)(nil)
	_ core.PrivateReplier = (*Adapter)(nil)
	_ core.Uploader       = (*Adapter)(nil)
)

// Intents are the gateway intents the bot asks for. Message content is a
// privileged intent: it must be enabled for the bot in the developer
// portal, or Discord closes the gateway with 4014.
const Intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages |
	discordgo.IntentsDirectMessages | discordgo.IntentsMessageContent

// New builds an adapter; it does not connect (Start does).
func New(opts Options) (*Adapter, error) {
	if opts.Token == "" {
		return nil, errors.New("discord: token is required")
	}
	if opts.APIURL == "" {
		opts.APIURL = DefaultAPIURL
	}
	base, err := url.Parse(opts.APIURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("discord: api_url %q: want an http(s) URL", opts.APIURL)
	}
	if opts.ChannelLimit <= 0 {
		opts.ChannelLimit = 5
	}
	if opts.ChannelWindow <= 0 {
		opts.ChannelWindow = 5 * time.Second
	}
	if opts.MaxUpload <= 0 || opts.MaxUpload > MaxUpload {
		opts.MaxUpload = MaxUpload
	}
	if opts.TokenLife <= 0 {
		opts.TokenLife = 15 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s, err := discordgo.New("Bot " + opts.Token)
	if err != nil {
		return nil, fmt.Errorf("discord: new session: %w", err)
	}
	log := opts.Logger.With("platform", "discord")
	a := &Adapter{
		opts:         opts,
		log:          log,
		retry:        newPolicy(log),
		gatewayRetry: gatewayPolicy(log),
		identifyWait: 5 * time.Second,
		flapWait:     time.Second,
		session:      s,
		budget:       newBudget(opts.ChannelLimit, opts.ChannelWindow),
		interactions: map[string]*interaction{},
		sent:         map[string]*sentMessage{},
		threads:      map[string]string{},
		flat:         map[string]bool{},
	}
	a.journal = journal.New(journal.Options{Store: opts.State, Key: cmp.Or(opts.JournalKey, pendingKey), ID: messageID, Logger: log})
	a.in = intake.New(a.journal, func() (core.Handler, context.Context) {
		h, ctx, _ := a.running()
		return h, ctx
	})
	a.clicks = relay.New(func(_ string, c click) { a.answerClick(c) })
	transport := http.DefaultTransport.(*http.Transport).Clone()
	s.Client = &http.Client{Timeout: 30 * time.Second, Transport: rewrite{base: base, next: transport}}
	a.http = &http.Client{Timeout: 2 * time.Minute, Transport: transport}
	a.dialer = &websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: 15 * time.Second,
		NetDialContext: (&net.Dialer{Timeout: 15 * time.Second}).DialContext}
	s.StateEnabled = false
	s.ShouldRetryOnRateLimit = false // Adapter.request honours 429s with a context and a bound
	s.MaxRestRetries = 0             // and retries 5xx itself
	s.LogLevel = discordgo.LogError  // warnings print whole events, message contents included
	logOnce.Do(func() { discordgo.Logger = sdkLog })
	a.names = namecache.New(namecache.Options{Lookup: a.channelName})
	return a, nil
}

var logOnce sync.Once

// sdkLog sends discordgo's error lines (its other levels print payloads)
// to slog's default logger. discordgo's
// logger is one for the process, so it cannot be a particular adapter's.
func sdkLog(msgL, _ int, format string, a ...any) {
	if msgL != discordgo.LogError {
		return
	}
	slog.Default().Warn("discordgo: "+fmt.Sprintf(format, a...), "platform", "discord")
}

// Platform implements core.Adapter.
func (a *Adapter) Platform() string { return "discord" }

// Limits implements core.Adapter. Edits of one message at most once a
// second and tool-activity posts every two seconds leave room in the
// channel's budget of about 5 requests per 5 s for continuations.
func (a *Adapter) Limits() core.Limits {
	return core.Limits{
		MaxLen:          MaxLen,
		MinEditInterval: time.Second,
		MinPostInterval: 2 * time.Second,
		MaxUpload:       a.opts.MaxUpload,
	}
}

// Measure implements core.Poster: the rendered length in characters.
func (a *Adapter) Measure(markdown string) int { return Measure(markdown) }

// Start connects to the gateway, registers the slash commands and delivers
// messages to h until ctx is cancelled, reconnecting and resuming after
// op 7, op 9, dropped sockets and unacknowledged heartbeats (see
// runGateway). Start returns an error when the bot cannot connect for good
// (a bad token, intents not enabled) and nil after ctx ends; either way no
// connection, heartbeat or retry of its own outlives it.
func (a *Adapter) Start(ctx context.Context, h core.Handler) error {
	a.mu.Lock()
	if a.started {
		a.mu.Unlock()
		return errors.New("discord: Start called twice")
	}
	a.started, a.handler, a.life = true, h, ctx
	a.mu.Unlock()
	defer a.in.Close() // after the gateway is closed: no event comes later
	defer a.clicks.Close()

	ctx, cancel := context.WithCancel(ctx)
	var registering sync.WaitGroup
	defer registering.Wait()
	defer cancel() // a fatal error ends the registration too
	gateway := func(ctx context.Context, s *gatewaySession) error {
		return a.runGateway(ctx, s, func() {
			// The gateway goes on being read (heartbeat ACKs, events) meanwhile.
			registering.Add(1)
			go func() {
				defer registering.Done()
				if err := a.registerCommands(ctx); err != nil && ctx.Err() == nil {
					a.log.Error("register slash commands", "err", err)
				}
			}()
		})
	}
	var err error
	if a.opts.Replica == nil {
		err = gateway(ctx, &gatewaySession{})
	} else {
		err = a.lead(ctx, gateway)
	}
	a.stop()
	return err
}

func (a *Adapter) stop() {
	a.mu.Lock()
	a.stopped = true
	a.mu.Unlock()
}

// fatalGatewayError tells errors no retry can fix.
func fatalGatewayError(err error) error {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		switch ce.Code {
		case 4004:
			return fmt.Errorf("discord: the bot token was rejected (gateway close 4004): %w", err)
		case 4010, 4011, 4012:
			return fmt.Errorf("discord: the gateway refused the connection (close %d): %w", ce.Code, err)
		case 4013, 4014:
			return fmt.Errorf("discord: intents not allowed (gateway close %d): enable the MESSAGE CONTENT intent for the bot in the developer portal: %w", ce.Code, err)
		}
	}
	if code, status := apiCode(err); status == http.StatusUnauthorized {
		return fmt.Errorf("discord: the bot token was rejected (HTTP 401, code %d): %w", code, err)
	}
	return nil
}

func (a *Adapter) onReady(r *discordgo.Ready) {
	a.mu.Lock()
	if r.User != nil {
		a.botID = r.User.ID
	}
	if r.Application != nil {
		a.appID = r.Application.ID
	}
	a.mu.Unlock()
	a.log.Info("connected to gateway", "guilds", len(r.Guilds))
	a.replayed.Do(a.replay)
}

// commands are the slash commands golem registers: /ask, Discord's way to
// talk to the agent, then core's command list, each argument an optional
// or required string option (the adapter joins their values after the
// name, as a chat command is typed).
func commands() []*discordgo.ApplicationCommand {
	out := []*discordgo.ApplicationCommand{{
		Name: "ask", Description: "Ask the coding agent; the channel keeps the conversation",
		Options: []*discordgo.ApplicationCommandOption{{Type: discordgo.ApplicationCommandOptionString, Name: "prompt", Description: "What to ask or do", Required: true}},
	}}
	for _, c := range core.Commands() {
		cmd := &discordgo.ApplicationCommand{Name: c.Name, Description: c.Summary}
		for _, arg := range c.Args {
			cmd.Options = append(cmd.Options, &discordgo.ApplicationCommandOption{
				Type: discordgo.ApplicationCommandOptionString, Name: arg.Name, Description: arg.Summary, Required: arg.Required})
		}
		out = append(out, cmd)
	}
	return out
}

// registerCommands overwrites the bot's commands in each configured guild
// (instant) or globally (Discord may take a while to show them).
func (a *Adapter) registerCommands(ctx context.Context) error {
	a.mu.Lock()
	app := a.appID
	a.mu.Unlock()
	if app == "" {
		return errors.New("discord: READY carried no application id")
	}
	scopes := a.opts.Guilds
	if len(scopes) == 0 {
		scopes = []string{""}
	}
	for _, guild := range scopes {
		err := a.call(ctx, "", "register commands", func(opts ...discordgo.RequestOption) error {
			_, err := a.session.ApplicationCommandBulkOverwrite(app, guild, commands(), opts...)
			return err
		})
		if err != nil {
			return fmt.Errorf("guild %q: %w", guild, err)
		}
	}
	a.log.Info("slash commands registered", "guilds", len(a.opts.Guilds))
	return nil
}
