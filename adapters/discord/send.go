package discord

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/retry"
)

// interaction is a slash command's response state. mu serializes the
// calls that use its token (one conversation's answer at a time).
type interaction struct {
	in      *discordgo.Interaction
	private bool      // deferred ephemerally: command answers and refusals
	expires time.Time // when the token stops working, less a margin

	mu       sync.Mutex
	deferred bool   // the deferral was accepted
	used     bool   // @original holds an answer, or was deleted
	original string // the original response's message id, once known
	expired  bool   // Discord said the token is no longer valid
}

func (st *interaction) alive() bool { return !st.expired && time.Now().Before(st.expires) }

// sentMessage is a message posted through an interaction's webhook: it is
// edited through the webhook while the token lives, then through the bot
// token, or replaced by a new bot message when Discord refuses that.
type sentMessage struct {
	st          *interaction
	hook        string // "@original" or the follow-up's id
	replacement string // the bot message that carries the text since the token expired
}

// noMentions is sent with every message: nothing the agent writes pings.
var noMentions = &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}

// render renders markdown and, as a last guard, cuts what core's splitter
// should never hand over: a message over MaxLen, which Discord rejects.
func (a *Adapter) render(markdown string) string {
	s := Render(markdown)
	if utf8.RuneCountInString(s) > MaxLen {
		a.log.Warn("rendered message over the limit cut", "len", utf8.RuneCountInString(s))
		s = string([]rune(s)[:MaxLen-1]) + "…"
	}
	if s == "" {
		s = "\u200b" // Discord refuses empty content
	}
	return s
}

func (a *Adapter) interaction(id string) *interaction {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.interactions[id]
}

// pruneLocked forgets interactions and their messages well past their
// token's life. Call with a.mu held.
func (a *Adapter) pruneLocked() {
	if len(a.interactions) < 512 {
		return
	}
	cutoff := time.Now().Add(-time.Hour)
	for id, st := range a.interactions {
		if st.expires.Before(cutoff) {
			delete(a.interactions, id)
		}
	}
	for id, sm := range a.sent {
		if sm.st.expires.Before(cutoff) {
			delete(a.sent, id)
		}
	}
}

// Send implements core.Adapter. The answer to a slash command fills the
// deferred response (@original) first, then follow-ups, while the token
// lives; everything else, and everything after the token expired, is a
// channel message replying to to.ReplyTo. to.StartThread is ignored: tool
// activity already gets a thread of its own (see SendActivity).
func (a *Adapter) Send(ctx context.Context, to core.Place, text string) (core.MessageRef, error) {
	content := a.render(text)
	channel := to.Channel
	if to.Thread != "" {
		channel = to.Thread
	}
	replyTo := to.ReplyTo
	if st := a.interaction(to.ReplyTo); st != nil {
		ref, done, err := a.sendInteraction(ctx, st, content)
		if done {
			return ref, err
		}
		st.mu.Lock()
		replyTo = st.original // reply to the answer so far, if there is one
		st.mu.Unlock()
	}
	msg, err := a.channelSend(ctx, channel, replyTo, content)
	if err != nil {
		return core.MessageRef{}, err
	}
	return core.MessageRef{Channel: channel, ID: msg.ID}, nil
}

// sendInteraction posts content through st's webhook; done is false when
// the token cannot be used and the caller should post a channel message.
func (a *Adapter) sendInteraction(ctx context.Context, st *interaction, content string) (ref core.MessageRef, done bool, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.private || !st.alive() || !st.deferred {
		return ref, false, nil
	}
	hook := "@original"
	var msg *discordgo.Message
	if st.deferred && !st.used {
		msg, err = a.webhookEdit(ctx, st, hook, content)
	} else {
		msg, err = a.followUp(ctx, st, content, 0)
		if msg != nil {
			hook = msg.ID
		}
	}
	if isExpired(err) {
		st.expired = true
		return ref, false, nil
	}
	if err != nil {
		return ref, true, err
	}
	if hook == "@original" {
		st.used, st.original = true, msg.ID
	}
	a.mu.Lock()
	a.sent[msg.ID] = &sentMessage{st: st, hook: hook}
	a.mu.Unlock()
	return core.MessageRef{Channel: st.in.ChannelID, ID: msg.ID}, true, nil
}

// Edit implements core.Adapter. A message posted through an interaction is
// edited through its webhook while the token lives, then with the bot
// token; where Discord refuses that, a new message with the full text
// replaces it and takes its later edits.
func (a *Adapter) Edit(ctx context.Context, ref core.MessageRef, text string) error {
	content := a.render(text)
	a.mu.Lock()
	sm := a.sent[ref.ID]
	a.mu.Unlock()
	if sm == nil {
		_, err := a.channelEdit(ctx, ref.Channel, ref.ID, content)
		return err
	}
	st := sm.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if sm.replacement != "" {
		_, err := a.channelEdit(ctx, ref.Channel, sm.replacement, content)
		return err
	}
	if st.alive() {
		_, err := a.webhookEdit(ctx, st, sm.hook, content)
		if !isExpired(err) {
			return err
		}
		st.expired = true
	}
	if st.private {
		return errors.New("discord: edit ephemeral message: the interaction token expired")
	}
	_, err := a.channelEdit(ctx, ref.Channel, ref.ID, content)
	if code, status := apiCode(err); err != nil && (code == 50005 || status == http.StatusForbidden || status == http.StatusNotFound) {
		msg, err := a.channelSend(ctx, ref.Channel, ref.ID, content)
		if err != nil {
			return err
		}
		a.log.Info("interaction token expired; the answer continues in a new message")
		sm.replacement = msg.ID
		return nil
	}
	return err
}

// SendActivity implements core.Adapter: in a guild channel it starts a
// thread on the answer (once) and posts there; in a DM or inside a thread,
// where no thread can be started, it replies to the answer.
func (a *Adapter) SendActivity(ctx context.Context, answer core.MessageRef, text string) error {
	content := a.render(text)
	channel, replyTo := a.activityPlace(ctx, answer)
	_, err := a.channelSend(ctx, channel, replyTo, content)
	return err
}

func (a *Adapter) startThread(ctx context.Context, answer core.MessageRef) (string, error) {
	var ch *discordgo.Channel
	err := a.call(ctx, answer.Channel, "start thread", func(opts ...discordgo.RequestOption) error {
		var err error
		ch, err = a.session.MessageThreadStartComplex(answer.Channel, answer.ID, &discordgo.ThreadStart{
			Name: "Tool activity", AutoArchiveDuration: 1440,
		}, opts...)
		return err
	})
	id := ""
	switch code, _ := apiCode(err); {
	case err == nil:
		id = ch.ID
	case code == 160004: // a thread exists already; its id is the message's
		id = answer.ID
	case code == 50024: // not a channel for threads (a DM or a thread itself)
		a.mu.Lock()
		a.flat[answer.Channel] = true
		a.mu.Unlock()
		return "", err
	default:
		return "", err
	}
	a.mu.Lock()
	if len(a.threads) >= maxThreads {
		// Forget them all: a thread of an answer still running is found
		// again through Discord's 160004 above, at the cost of one request.
		clear(a.threads)
	}
	a.threads[answer.ID] = id
	a.mu.Unlock()
	return id, nil
}

// maxThreads bounds the activity threads remembered by answer, which would
// otherwise grow by one for every answer that used a tool.
const maxThreads = 4096

// ReplyPrivately implements core.PrivateReplier. A slash command's answer
// (or a refusal) is ephemeral: it fills an ephemeral deferral, or else it
// replaces /ask's public "thinking…" with an ephemeral follow-up. A
// message (mention or DM) gets a normal reply, as Discord has no private
// reply to a message.
func (a *Adapter) ReplyPrivately(ctx context.Context, to core.Message, text string) error {
	st := a.interaction(to.ID)
	if st != nil {
		st.mu.Lock()
		usable := st.deferred && st.alive()
		st.mu.Unlock()
		if !usable {
			st = nil
		}
	}
	if st == nil { // a message, or an interaction that cannot answer any more
		_, err := a.Send(ctx, core.Place{Channel: to.Channel, Thread: to.Thread, ReplyTo: to.ID}, text)
		return err
	}
	content := a.render(text)
	st.mu.Lock()
	defer st.mu.Unlock()
	var err error
	if st.private && !st.used {
		_, err = a.webhookEdit(ctx, st, "@original", content)
	} else {
		if !st.used { // /ask's public "thinking…": remove it first
			if derr := a.call(ctx, "", "delete deferred response", func(opts ...discordgo.RequestOption) error {
				return a.session.InteractionResponseDelete(st.in, opts...)
			}); derr != nil {
				a.log.Warn("delete deferred response", "err", derr)
			}
		}
		_, err = a.followUp(ctx, st, content, discordgo.MessageFlagsEphemeral)
	}
	if err == nil {
		st.used = true
	}
	return err
}

// Typing implements core.Typist for messages: Discord shows "typing…" for
// about 10 s, so it is renewed every 8 s until stop. A slash command
// already shows "thinking…".
func (a *Adapter) Typing(ctx context.Context, on core.Message) (stop func()) {
	if a.interaction(on.ID) != nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			err := a.call(ctx, "", "typing", func(opts ...discordgo.RequestOption) error {
				return a.session.ChannelTyping(on.Channel, opts...)
			})
			if err != nil && ctx.Err() == nil {
				a.log.Debug("typing", "err", err)
			}
			if retry.Wait(ctx, 8*time.Second) != nil {
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

// isExpired tells an interaction token that no longer works.
func isExpired(err error) bool {
	code, status := apiCode(err)
	return code == 50027 || (err != nil && status == http.StatusUnauthorized)
}

// --- the REST calls, each through Adapter.call ---

// channelSend creates a channel message. It carries a nonce with
// enforce_nonce, so Discord answers a repeat of the request with the
// message the first one made: an attempt that failed after it may have
// landed (a 5xx, a timeout) is repeated without posting twice.
func (a *Adapter) channelSend(ctx context.Context, channel, replyTo, content string) (*discordgo.Message, error) {
	data := messageCreate{MessageSend: &discordgo.MessageSend{Content: content, AllowedMentions: noMentions},
		Nonce: newNonce(), EnforceNonce: true}
	if replyTo != "" {
		no := false
		data.Reference = &discordgo.MessageReference{MessageID: replyTo, ChannelID: channel, FailIfNotExists: &no}
	}
	uri := discordgo.EndpointChannelMessages(channel)
	return a.messageRequest(ctx, channel, retry.Call{Method: "post message", Idempotent: true}, http.MethodPost, uri, uri, data)
}

// messageCreate is discordgo's MessageSend with the nonce fields it lacks.
type messageCreate struct {
	*discordgo.MessageSend
	Nonce        string `json:"nonce"`
	EnforceNonce bool   `json:"enforce_nonce"`
}

// newNonce returns a nonce for one message: decimal, within Discord's 25
// characters.
func newNonce() string { return strconv.FormatUint(rand.Uint64()>>1, 10) }

func (a *Adapter) channelEdit(ctx context.Context, channel, id, content string) (*discordgo.Message, error) {
	data := &discordgo.MessageEdit{ID: id, Channel: channel, Content: &content, AllowedMentions: noMentions}
	var msg *discordgo.Message
	err := a.call(ctx, channel, "edit message", func(opts ...discordgo.RequestOption) error {
		var err error
		msg, err = a.session.ChannelMessageEditComplex(data, opts...)
		return err
	})
	return msg, err
}

// webhookEdit edits an interaction's message. It uses its own request
// rather than discordgo's WebhookMessageEdit, which puts every webhook
// edit of the bot into one rate-limit bucket, so one channel's budget
// would stall all answers.
func (a *Adapter) webhookEdit(ctx context.Context, st *interaction, hook, content string) (*discordgo.Message, error) {
	data := &discordgo.WebhookEdit{Content: &content, AllowedMentions: noMentions}
	uri := discordgo.EndpointWebhookMessage(st.in.AppID, st.in.Token, hook)
	bucket := discordgo.EndpointWebhookToken(st.in.AppID, st.in.Token)
	channel := st.in.ChannelID
	if st.private {
		channel = "" // ephemeral messages are not in the channel
	}
	return a.webhook(ctx, channel, "edit interaction response", http.MethodPatch, uri, bucket, data)
}

func (a *Adapter) followUp(ctx context.Context, st *interaction, content string, flags discordgo.MessageFlags) (*discordgo.Message, error) {
	data := &discordgo.WebhookParams{Content: content, AllowedMentions: noMentions, Flags: flags}
	uri := discordgo.EndpointWebhookToken(st.in.AppID, st.in.Token)
	channel := st.in.ChannelID
	if flags&discordgo.MessageFlagsEphemeral != 0 {
		channel = ""
	}
	return a.webhook(ctx, channel, "post follow-up", http.MethodPost, uri+"?wait=true", uri, data)
}

// webhook sends one request to an interaction's webhook in the rate-limit
// bucket given and returns the message Discord answers with. An edit
// (PATCH) is repeated after any transient failure; a follow-up (POST) takes
// no nonce, so one that may have landed is not repeated (the retry package
// logs it, and the error wraps retry.ErrMayHaveLanded).
func (a *Adapter) webhook(ctx context.Context, channel, what, method, uri, bucket string, data any) (*discordgo.Message, error) {
	return a.messageRequest(ctx, channel, retry.Call{Method: what, Idempotent: method != http.MethodPost}, method, uri, bucket, data)
}

// messageRequest sends data as JSON to uri in the rate-limit bucket given
// and returns the message Discord answers with.
func (a *Adapter) messageRequest(ctx context.Context, channel string, c retry.Call, method, uri, bucket string, data any) (*discordgo.Message, error) {
	var msg discordgo.Message
	err := a.request(ctx, channel, c, func(opts ...discordgo.RequestOption) error {
		body, err := a.session.RequestWithBucketID(method, uri, data, bucket, opts...)
		if err != nil {
			return err
		}
		return discordgo.Unmarshal(body, &msg)
	})
	if err != nil {
		return nil, err
	}
	return &msg, nil
}
