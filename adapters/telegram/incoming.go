package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/golem-chat/golem/core"
)

// normalize turns an update into a core.Message. It keeps new messages
// from people: in private chats always, in groups only when the bot is
// mentioned, replied to or given a command (a bare /cmd, or /cmd@thisbot);
// edits, other bots, the bot itself and service messages are dropped.
// It does no I/O: the attachments it returns are downloaded by attach.
func (a *Adapter) normalize(u tgbotapi.Update, x extra) (core.Message, []file, bool) {
	msg := u.Message
	if msg == nil || msg.From == nil || msg.From.IsBot || msg.Chat == nil {
		return core.Message{}, nil, false
	}
	private := msg.Chat.Type == "private"
	text, ents := msg.Text, msg.Entities
	if text == "" {
		text, ents = msg.Caption, msg.CaptionEntities
	}
	thread := x.thread()
	mentioned := false
	// In a forum topic every message replies to the topic's first message;
	// that is not a reply to the bot.
	if r := msg.ReplyToMessage; r != nil && r.From != nil && r.From.ID == a.self.ID && int64(r.MessageID) != thread {
		mentioned = true
	}
	text, byName := a.stripMentions(text, ents)
	mentioned = mentioned || byName
	text, command, forUs := a.command(text)
	if !forUs {
		return core.Message{}, nil, false
	}
	if !private && !mentioned && !command {
		return core.Message{}, nil, false
	}
	m := core.Message{
		EventID:   "telegram:" + strconv.Itoa(u.UpdateID),
		Platform:  "telegram",
		Channel:   strconv.FormatInt(msg.Chat.ID, 10),
		ID:        strconv.Itoa(msg.MessageID),
		User:      strconv.FormatInt(msg.From.ID, 10),
		UserName:  displayName(msg.From),
		Text:      text,
		Mentioned: mentioned || command,
		DM:        private,
	}
	if thread != 0 {
		m.Thread = strconv.FormatInt(thread, 10)
	}
	a.titles.put(m.Channel, msg.Chat.Title)
	files := attachments(msg)
	if m.Text == "" && len(files) == 0 {
		return core.Message{}, nil, false // a sticker, a service message, ...
	}
	return m, files, true
}

func displayName(u *tgbotapi.User) string {
	if u.UserName != "" {
		return u.UserName
	}
	return strings.TrimSpace(u.FirstName + " " + u.LastName)
}

// stripMentions removes mentions of the bot (by @username or, for users
// without one, a text_mention) from text, using the entities' UTF-16
// offsets, and reports whether there was one. The spaces of a line that
// held a mention are collapsed; other lines (code the user pasted) keep
// their layout.
func (a *Adapter) stripMentions(text string, ents []tgbotapi.MessageEntity) (string, bool) {
	units := utf16.Encode([]rune(text))
	mentionLines := map[int]bool{}
	// Walk backwards so earlier offsets stay valid as ranges are cut.
	for i := len(ents) - 1; i >= 0; i-- {
		e := ents[i]
		if e.Offset < 0 || e.Length <= 0 || e.Offset > len(units) || e.Length > len(units)-e.Offset { // no overflow
			continue
		}
		word := string(utf16.Decode(units[e.Offset : e.Offset+e.Length]))
		switch {
		case e.Type == "mention" && strings.EqualFold(word, "@"+a.self.UserName):
		case e.Type == "text_mention" && e.User != nil && e.User.ID == a.self.ID:
		default:
			continue
		}
		// A mention holds no newline, so cutting it numbers no line anew.
		mentionLines[strings.Count(string(utf16.Decode(units[:e.Offset])), "\n")] = true
		units = append(units[:e.Offset:e.Offset], units[e.Offset+e.Length:]...)
	}
	if len(mentionLines) == 0 {
		return strings.TrimSpace(text), false
	}
	lines := strings.Split(string(utf16.Decode(units)), "\n")
	for i := range mentionLines {
		lines[i] = strings.Join(strings.Fields(lines[i]), " ")
	}
	return strings.TrimSpace(strings.Join(lines, "\n")), true
}

// command normalizes "/name@thisbot args" to "/name args". It reports
// whether text is a command and whether it is for this bot (false for
// "/name@otherbot").
func (a *Adapter) command(text string) (string, bool, bool) {
	if !strings.HasPrefix(text, "/") {
		return text, false, true
	}
	word, rest, _ := strings.Cut(text, " ")
	name, bot, hasBot := strings.Cut(word, "@")
	if hasBot && !strings.EqualFold(bot, a.self.UserName) {
		return text, false, false
	}
	if name == "/start" { // what Telegram sends when a user opens the bot
		name = "/help"
	}
	return strings.TrimSpace(name + " " + rest), true, true
}

// file is an attachment of a message, still to be downloaded.
type file struct {
	id, name string
	size     int
}

// attachments lists the message's photo (its largest size) and document.
func attachments(msg *tgbotapi.Message) []file {
	var files []file
	if n := len(msg.Photo); n > 0 {
		p := msg.Photo[n-1]
		files = append(files, file{p.FileID, fmt.Sprintf("photo-%d.jpg", msg.MessageID), p.FileSize})
	}
	if d := msg.Document; d != nil {
		name := d.FileName
		if name == "" {
			name = fmt.Sprintf("document-%d", msg.MessageID)
		}
		files = append(files, file{d.FileID, name, d.FileSize})
	}
	return files
}

// attach downloads files into the inbox and puts them on m. A file that
// cannot be saved becomes a note appended to m.Text instead, so the agent
// and the user hear why.
func (a *Adapter) attach(ctx context.Context, m *core.Message, files []file) {
	var notes []string
	for _, f := range files {
		att, err := a.download(ctx, f.id, f.name, f.size)
		if err != nil {
			a.log.Warn("telegram: attachment not saved", "err", err)
			notes = append(notes, core.NotSaved(f.name, err))
			continue
		}
		m.Attachments = append(m.Attachments, att)
	}
	if len(notes) > 0 {
		m.Text = strings.TrimSpace(m.Text + "\n\n" + strings.Join(notes, "\n"))
	}
}

// downloadTimeout bounds one attachment's download (20 MiB at a slow
// 100 KB/s takes under 4 minutes).
const downloadTimeout = 5 * time.Minute

// download fetches a file through getFile and the configured API base
// (not the library's fixed FileEndpoint), so a local Bot API server works.
func (a *Adapter) download(ctx context.Context, fileID, name string, size int) (core.Attachment, error) {
	limit := a.opts.Inbox.MaxBytes
	if limit <= 0 {
		limit = 20 << 20
	}
	if int64(size) > limit {
		return core.Attachment{}, fmt.Errorf("telegram: download %q: %w", name, core.ErrTooLarge)
	}
	res, err := a.do(ctx, "getFile", tgbotapi.Params{"file_id": fileID})
	if err != nil {
		return core.Attachment{}, err
	}
	var f tgbotapi.File
	if err := json.Unmarshal(res, &f); err != nil || f.FilePath == "" {
		return core.Attachment{}, fmt.Errorf("telegram: getFile %q: no file path (%v)", name, err)
	}
	// The message and the later ones of its chat wait for this download:
	// bound it.
	ctx, cancel := context.WithTimeout(ctx, downloadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/file/bot"+a.opts.Token+"/"+strings.TrimLeft(f.FilePath, "/"), nil)
	if err != nil {
		return core.Attachment{}, fmt.Errorf("telegram: download %q: %w", name, redact(err, a.opts.Token))
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return core.Attachment{}, fmt.Errorf("telegram: download %q: %w", name, redact(err, a.opts.Token))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return core.Attachment{}, fmt.Errorf("telegram: download %q: HTTP %d", name, resp.StatusCode)
	}
	att, err := a.opts.Inbox.Save(name, resp.Body)
	if err != nil {
		return core.Attachment{}, fmt.Errorf("telegram: download %q: %w", name, err)
	}
	return att, nil
}
