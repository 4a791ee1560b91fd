package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/golem-chat/golem/core"
)

// pendingKey is where, in Options.State, the messages acked to Slack but
// not yet handed to the handler are kept.
const pendingKey = "slack.pending"

// eventID is the journal's id of a payload, which is also its message's
// EventID: an Events API payload's event_id, a slash command's
// "command:" and trigger_id.
func eventID(raw json.RawMessage) string {
	var head struct {
		EventID   string `json:"event_id"`
		TriggerID string `json:"trigger_id"`
	}
	_ = json.Unmarshal(raw, &head)
	if head.EventID == "" && head.TriggerID != "" {
		return "command:" + head.TriggerID
	}
	return head.EventID
}

// onEventsAPI turns an app_mention or a direct message into a core.Message.
// A message with files is prepared on its own goroutine, so the socket
// keeps reading while they download; see inOrder. ack acks the envelope.
func (a *Adapter) onEventsAPI(ctx context.Context, h core.Handler, ev socketmode.Event, ack func()) {
	outer, ok := ev.Data.(slackevents.EventsAPIEvent)
	if !ok {
		return
	}
	retry := 0
	var raw json.RawMessage
	if ev.Request != nil {
		retry, raw = ev.Request.RetryAttempt, ev.Request.Payload
	}
	a.takeEvent(ctx, h, outer, raw, retry, ack)
}

// replay hands on the messages and slash commands the last run journaled,
// oldest first, before the socket opens; their files are downloaded anew.
// Those that had reached the handler just before golem stopped are dropped
// there as duplicates of their event id.
func (a *Adapter) replay(ctx context.Context, h core.Handler) {
	a.journal.Replay(a.handOn(ctx, h, "slack: handing on an event taken before the restart"))
}

// adoptGone hands on what the replicas gone from the cluster left in their
// journals (see journal.Adopt); called on Start's goroutine.
func (a *Adapter) adoptGone(ctx context.Context, h core.Handler) {
	if a.opts.Replica == nil || a.opts.JournalOf == nil {
		return
	}
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	names, err := a.opts.Replica.Gone(gctx)
	cancel()
	if err != nil {
		a.log.Warn("slack: the replicas gone from the cluster are not known; their journals wait for the next round", "err", err)
		return
	}
	for _, name := range names {
		if n := a.journal.Adopt(a.opts.JournalOf(name), a.handOn(ctx, h, "slack: handing on an event a replica gone from the cluster had taken")); n > 0 {
			a.log.Info("slack: handed on the journal of a replica gone from the cluster", "replica", name, "events", n)
		}
	}
}

// handOn hands on one journaled payload, saying so in the log; it reports
// whether it was journaled again (see inOrder).
func (a *Adapter) handOn(ctx context.Context, h core.Handler, say string) func(raw json.RawMessage) bool {
	return func(raw json.RawMessage) bool {
		id := eventID(raw)
		a.log.Info(say, "event_id", id)
		if strings.HasPrefix(id, "command:") {
			var cmd slackapi.SlashCommand
			if err := json.Unmarshal(raw, &cmd); err != nil {
				a.log.Error("slack: a journaled slash command that cannot be decoded dropped", "event_id", id, "err", err)
				return false
			}
			m, ok := a.fromSlashCommand(cmd)
			return ok && a.inOrder(ctx, h, m, nil, raw, nil)
		}
		outer, err := slackevents.ParseEvent(raw, slackevents.OptionNoVerifyToken())
		if err != nil {
			a.log.Error("slack: a journaled event that cannot be decoded dropped", "event_id", id, "err", err)
			return false
		}
		return a.takeEvent(ctx, h, outer, raw, 0, nil)
	}
}

// takeEvent hands on the message of one Events API payload, if it is one
// for the bot, and reports whether it was journaled (see inOrder).
func (a *Adapter) takeEvent(ctx context.Context, h core.Handler, outer slackevents.EventsAPIEvent, raw json.RawMessage, retry int, ack func()) bool {
	if outer.Type != slackevents.CallbackEvent {
		return false
	}
	cb, _ := outer.Data.(*slackevents.EventsAPICallbackEvent)
	if cb == nil {
		return false
	}
	var (
		m     core.Message
		files []slackapi.File
		ok    bool
	)
	switch e := outer.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		m, files, ok = a.fromMention(e)
	case *slackevents.MessageEvent:
		m, files, ok = a.fromDirectMessage(e)
	case *slackevents.AssistantThreadStartedEvent:
		a.onAssistantThread(ctx, e.AssistantThread, true)
	case *slackevents.AssistantThreadContextChangedEvent:
		a.onAssistantThread(ctx, e.AssistantThread, false)
	}
	if !ok {
		return false
	}
	a.inAssistantThread(ctx, &m)
	m.EventID = cb.EventID
	m.Workspace = outer.TeamID
	a.log.Debug("slack: message", "event_id", m.EventID, "channel", m.Channel, "user", m.User,
		"dm", m.DM, "files", len(files), "retry_attempt", retry)
	return a.inOrder(ctx, h, m, files, raw, ack)
}

// inOrder hands m to h after its files are saved and after the messages of
// its channel that came before it (see internal/intake): a message with
// nothing to wait for at once, after its envelope is acked; any other is
// first journaled (raw, the payload it came in, if any), then its envelope
// acked, since Slack does not send an acked envelope again. It reports
// whether m was journaled. ack may be nil. Called from Start's goroutine
// only, in the order events arrive.
func (a *Adapter) inOrder(ctx context.Context, h core.Handler, m core.Message, files []slackapi.File, raw json.RawMessage, ack func()) bool {
	a.noteAsker(m)
	if len(files) > 0 && !core.Admitted(h, m) {
		files = nil // a stranger's files are not fetched: the message is refused
	}
	var prepare func(*core.Message) bool
	if len(files) > 0 {
		prepare = func(m *core.Message) bool {
			a.attach(ctx, m, files)
			return ctx.Err() == nil // cut short: it stays in the journal
		}
	}
	return a.in.Take(m, m.EventID, raw, true, ack, prepare)
}

// fromMention normalizes an app_mention in a channel. Mentions in direct
// messages are left to the message.im event, mentions by bots (this one
// included) and edited mentions are ignored.
func (a *Adapter) fromMention(e *slackevents.AppMentionEvent) (core.Message, []slackapi.File, bool) {
	botUser, botID := a.botIdentity()
	if e.User == "" || e.User == botUser || e.BotID != "" || (botID != "" && e.BotID == botID) ||
		e.Edited != nil || isDMChannel(e.Channel) {
		return core.Message{}, nil, false
	}
	m := core.Message{
		Platform:  "slack",
		Channel:   e.Channel,
		Thread:    threadOf(e.ThreadTimeStamp, e.TimeStamp),
		ID:        e.TimeStamp,
		User:      e.User,
		Text:      normalizeText(e.Text, botUser),
		Mentioned: true,
	}
	return m, e.Files, true
}

// fromDirectMessage normalizes a message in a DM with the bot. Messages in
// channels (they come as app_mention), the bot's own and other bots'
// messages, and edits, deletions and other subtypes are ignored.
func (a *Adapter) fromDirectMessage(e *slackevents.MessageEvent) (core.Message, []slackapi.File, bool) {
	botUser, _ := a.botIdentity()
	if e.ChannelType != "im" || e.User == "" || e.User == botUser || e.BotID != "" {
		return core.Message{}, nil, false
	}
	switch e.SubType {
	case "", "file_share", "thread_broadcast":
	default: // message_changed, message_deleted, bot_message, channel_join, ...
		return core.Message{}, nil, false
	}
	var files []slackapi.File
	if e.Message != nil {
		files = e.Message.Files
	}
	m := core.Message{
		Platform:  "slack",
		Channel:   e.Channel,
		Thread:    threadOf(e.ThreadTimeStamp, e.TimeStamp),
		ID:        e.TimeStamp,
		User:      e.User,
		Text:      normalizeText(e.Text, botUser),
		Mentioned: botUser != "" && strings.Contains(e.Text, "<@"+botUser),
		DM:        true,
	}
	return m, files, true
}

// fromSlashCommand normalizes "/golem stop now" to the command "/stop now"
// ("/golem" alone is "/help"). The trigger id stands in for an event id.
func (a *Adapter) fromSlashCommand(c slackapi.SlashCommand) (core.Message, bool) {
	if c.UserID == "" || c.ChannelID == "" {
		return core.Message{}, false
	}
	text := strings.TrimSpace(c.Text)
	switch {
	case text == "":
		text = "/help"
	case !strings.HasPrefix(text, "/"):
		text = "/" + text
	}
	m := core.Message{
		Platform:  "slack",
		Workspace: c.TeamID,
		Channel:   c.ChannelID,
		User:      c.UserID,
		UserName:  c.UserName,
		Text:      text,
		Mentioned: true,
		DM:        isDMChannel(c.ChannelID),
	}
	if c.TriggerID != "" {
		m.EventID = "command:" + c.TriggerID
	}
	return m, true
}

// isDMChannel reports whether a channel id is a direct message ("D...").
func isDMChannel(id string) bool { return strings.HasPrefix(id, "D") }

// threadOf is the thread a message is in: its thread_ts unless that is the
// message itself (a thread's parent).
func threadOf(threadTS, ts string) string {
	if threadTS == ts {
		return ""
	}
	return threadTS
}

// slackMarkup matches Slack's <...> forms in incoming text.
var slackMarkup = regexp.MustCompile(`<([^<>]*)>`)

var unescaper = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")

// normalizeText turns a message's text into what the agent reads: the bot's
// mentions removed, links as plain URLs ("label (url)" when labelled),
// <!here> as "@here", other mentions kept, entities unescaped, the ends
// trimmed. A command ("/stop") thus starts the text.
func normalizeText(text, botUser string) string {
	text = slackMarkup.ReplaceAllStringFunc(text, func(tag string) string {
		inner := tag[1 : len(tag)-1]
		target, label, _ := strings.Cut(inner, "|")
		switch {
		case botUser != "" && target == "@"+botUser:
			return ""
		case strings.HasPrefix(target, "@"), strings.HasPrefix(target, "#"):
			return tag
		case strings.HasPrefix(target, "!"):
			if label != "" {
				return label
			}
			return "@" + strings.TrimPrefix(target, "!")
		case strings.HasPrefix(target, "mailto:"):
			return strings.TrimPrefix(target, "mailto:")
		case label != "" && label != target:
			return label + " (" + target + ")"
		}
		return target
	})
	return strings.TrimSpace(unescaper.Replace(text))
}

// attach downloads files into the inbox and puts them on m. A file that
// cannot be saved is named in a note appended to m.Text, so the agent and
// the user learn of it instead of losing it silently.
func (a *Adapter) attach(ctx context.Context, m *core.Message, files []slackapi.File) {
	var notes []string
	for _, f := range files {
		att, err := a.download(ctx, f)
		if err != nil {
			a.log.Warn("slack: download an attachment", "file", f.ID, "err", err)
			notes = append(notes, core.NotSaved(f.Name, err))
			continue
		}
		m.Attachments = append(m.Attachments, att)
	}
	if len(notes) > 0 {
		m.Text = strings.TrimSpace(m.Text + "\n\n" + strings.Join(notes, "\n"))
	}
}

// errNoInbox refuses attachments when no inbox is configured.
var errNoInbox = errors.New("no inbox folder configured")

// download saves one file into the inbox with the bot token, asking
// files.info first when the event carried only the file's id.
func (a *Adapter) download(ctx context.Context, f slackapi.File) (core.Attachment, error) {
	if a.opts.Inbox.Dir == "" {
		return core.Attachment{}, errNoInbox
	}
	limit := a.opts.Inbox.MaxBytes
	if limit <= 0 {
		limit = 20 << 20
	}
	if int64(f.Size) > limit {
		return core.Attachment{}, fmt.Errorf("%w: %d bytes", core.ErrTooLarge, f.Size)
	}
	if f.URLPrivateDownload == "" && f.URLPrivate == "" {
		err := a.do(ctx, "files.info", func(ctx context.Context) error {
			info, _, _, err := a.api.GetFileInfoContext(ctx, f.ID, 0, 0)
			if err == nil {
				f = *info
			}
			return err
		})
		if err != nil {
			return core.Attachment{}, fmt.Errorf("slack: files.info %s: %w", f.ID, err)
		}
	}
	u := f.URLPrivateDownload
	if u == "" {
		u = f.URLPrivate
	}
	name := f.Name
	if name == "" {
		name = f.ID
	}
	var att core.Attachment
	err := a.do(ctx, "files.download", func(ctx context.Context) error {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(a.api.GetFileContext(ctx, u, pw)) }()
		var err error
		att, err = a.opts.Inbox.Save(name, pr)
		pr.CloseWithError(errors.New("stopped reading"))
		return err
	})
	if err != nil {
		return core.Attachment{}, fmt.Errorf("slack: download %s: %w", f.ID, err)
	}
	return att, nil
}
