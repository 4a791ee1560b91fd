package slack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/golem-chat/golem/core"
)

var _ core.Historian = (*Adapter)(nil)

// Pages read for one History: a thread's replies come oldest first, so the
// whole thread is read up to threadPages pages of pageSize replies (Slack
// advises no more than 200 a page); a channel's history comes newest first
// and is read until the bot's last word, at most historyPages pages.
const (
	pageSize     = 200
	threadPages  = 5
	historyPages = 3
)

// A thread longer than threadPages pages is read back from the mention in
// a window of time: firstWindow long, divided by windowGrowth while it
// holds more than threadPages pages, then multiplied by it while it holds
// too little (see enough) and has not reached the thread's start.
const (
	firstWindow  = 10 * time.Minute
	windowGrowth = 4
)

// History implements core.Historian. For a mention in a thread it reads
// the thread's messages before m (conversations.replies), for a mention at
// the top of a channel the channel's (conversations.history), and keeps
// those since the bot's last word there: walking back from m, it stops at
// the bot's own latest message or at the latest one that mentions the bot
// (it was asked that, and answered). When the stop is the bot's own message
// and anything came after it, that message is kept too, marked as the
// bot's, so the agent knows what the others answer to. At most limit
// messages, the newest, oldest first; joins, topic changes and other
// events are left out. Authors are display names (users.info, cached) and
// Slack's markup is plain text (see plainText). A DM, a message without
// an id and a first message in a place give nothing.
func (a *Adapter) History(ctx context.Context, m core.Message, limit int) ([]core.Said, error) {
	if m.DM || m.ID == "" || m.Channel == "" || limit <= 0 {
		return nil, nil
	}
	botUser, botID := a.botIdentity()
	if botUser == "" && botID == "" {
		return nil, errors.New("slack: read chat context: the bot's identity is not known yet")
	}
	var (
		before []slackapi.Message // newest first
		err    error
	)
	if m.Thread != "" {
		before, err = a.threadBefore(ctx, m.Channel, m.Thread, m.ID, func(msgs []slackapi.Message) bool {
			return enough(msgs, limit, botUser, botID)
		})
	} else {
		before, err = a.channelBefore(ctx, m.Channel, m.ID, limit, botUser, botID)
	}
	if err != nil {
		return nil, fmt.Errorf("slack: read chat context: %w", withScopeHint(err))
	}
	picked := since(before, limit, botUser, botID)
	if len(picked) == 0 {
		return nil, nil
	}
	names := a.names(ctx, picked, botUser)
	out := make([]core.Said, 0, len(picked))
	for _, msg := range slices.Backward(picked) {
		out = append(out, a.said(msg, names, botUser, botID))
	}
	return out, nil
}

// withScopeHint adds to a missing_scope error the scope Slack says is
// needed and what to do about it.
func withScopeHint(err error) error {
	if se, ok := errors.AsType[slackapi.SlackErrorResponse](err); ok && se.Err == "missing_scope" && se.Needed != "" {
		return fmt.Errorf("%w: the bot token needs the scope %s (add it under OAuth & Permissions and reinstall the app)", err, se.Needed)
	}
	return err
}

// mine reports whether msg is the bot's own.
func mine(msg slackapi.Message, botUser, botID string) bool {
	return (botUser != "" && msg.User == botUser) || (botID != "" && msg.BotID == botID)
}

// asksBot reports whether msg mentions the bot: <@U123> or <@U123|name>.
func asksBot(msg slackapi.Message, botUser string) bool {
	if botUser == "" {
		return false
	}
	return strings.Contains(msg.Text, "<@"+botUser+">") || strings.Contains(msg.Text, "<@"+botUser+"|")
}

// activity reports whether msg is one of the bot's tool-activity posts,
// not a word of its: the walk back passes over them.
func activity(msg slackapi.Message, botUser, botID string) bool {
	return mine(msg, botUser, botID) && msg.Metadata.EventType == activityMetadata.EventType
}

// since picks from before (newest first) the messages after the bot's last
// word, newest first, at most limit: the bot's own message that ends them
// (its answer, not a tool-activity post) is the last one picked when there
// is room and anything came after it.
func since(before []slackapi.Message, limit int, botUser, botID string) []slackapi.Message {
	var picked []slackapi.Message
	for _, msg := range before {
		if activity(msg, botUser, botID) {
			continue
		}
		if mine(msg, botUser, botID) {
			if len(picked) > 0 && len(picked) < limit && shown(msg) {
				picked = append(picked, msg)
			}
			break
		}
		if asksBot(msg, botUser) {
			break
		}
		if !shown(msg) {
			continue
		}
		picked = append(picked, msg)
		if len(picked) == limit {
			break
		}
	}
	return picked
}

// shown reports whether msg is something said (text or files), not an
// event such as a join, a topic change or a deleted message's tombstone.
func shown(msg slackapi.Message) bool {
	switch msg.SubType {
	case "", "bot_message", "thread_broadcast", "file_share", "me_message":
	default:
		return false
	}
	return strings.TrimSpace(msg.Text) != "" || len(msg.Files) > 0
}

// threadBefore returns the messages of the thread before ts, its parent
// included, newest first. Replies come oldest first, so a thread is read
// to its end; one too long for that (more than threadPages pages) is read
// back from ts in growing windows of time until one holds enough of the
// newest (enough, given them newest first) — Slack has no way to read a
// thread newest first.
func (a *Adapter) threadBefore(ctx context.Context, channel, thread, ts string, enough func([]slackapi.Message) bool) ([]slackapi.Message, error) {
	all, whole, err := a.replies(ctx, channel, thread, ts, "")
	if err != nil || whole {
		return all, err
	}
	end, ok := slackTime(ts)
	start, okStart := slackTime(thread)
	if !ok || !okStart {
		return nil, fmt.Errorf("conversations.replies: the thread has more than %d replies and %q is no timestamp", threadPages*pageSize, ts)
	}
	w := firstWindow
	var best []slackapi.Message
	for { // narrow the window until it can be read whole
		msgs, whole, err := a.replies(ctx, channel, thread, ts, slackTS(end.Add(-w)))
		if err != nil {
			return nil, err
		}
		if whole {
			best = msgs
			break
		}
		if w <= time.Second {
			return nil, fmt.Errorf("conversations.replies: more than %d replies in the second before the mention", threadPages*pageSize)
		}
		w /= windowGrowth
	}
	for !enough(best) && end.Add(-w).After(start) { // widen it while it holds too little
		w *= windowGrowth
		msgs, whole, err := a.replies(ctx, channel, thread, ts, slackTS(end.Add(-w)))
		if err != nil {
			return nil, err
		}
		if !whole { // too many in this one: the one before is what there is
			break
		}
		best = msgs
	}
	return best, nil
}

// replies reads the thread's messages before ts (from oldest, when not
// ""), newest first, up to threadPages pages; whole is false when there
// were more.
func (a *Adapter) replies(ctx context.Context, channel, thread, ts, oldest string) (msgs []slackapi.Message, whole bool, err error) {
	var all []slackapi.Message
	cursor := ""
	for range threadPages {
		var (
			page []slackapi.Message
			more bool
			next string
		)
		err := a.do(ctx, "conversations.replies", func(ctx context.Context) error {
			var err error
			page, more, next, err = a.api.GetConversationRepliesContext(ctx, &slackapi.GetConversationRepliesParameters{
				ChannelID: channel, Timestamp: thread, Latest: ts, Oldest: oldest, Inclusive: false, Limit: pageSize, Cursor: cursor,
				IncludeAllMetadata: true})
			return err
		})
		if err != nil {
			return nil, false, fmt.Errorf("conversations.replies: %w", err)
		}
		all = append(all, page...)
		if !more || next == "" {
			// Slack answers latest exclusively; a message at ts is dropped
			// all the same, should an answer include it.
			all = slices.DeleteFunc(all, func(m slackapi.Message) bool { return m.Timestamp == ts })
			slices.Reverse(all)
			return all, true, nil
		}
		cursor = next
	}
	return nil, false, nil
}

// slackTime is the time of a Slack timestamp ("1700000000.000100").
func slackTime(ts string) (time.Time, bool) {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	us, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	return time.Unix(s, us*1000), true
}

// slackTS is t as a Slack timestamp.
func slackTS(t time.Time) string {
	return fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000)
}

// channelBefore returns the channel's top-level messages before ts, newest
// first, read until the bot's last word or limit messages that show.
func (a *Adapter) channelBefore(ctx context.Context, channel, ts string, limit int, botUser, botID string) ([]slackapi.Message, error) {
	var all []slackapi.Message
	cursor := ""
	for range historyPages {
		var res *slackapi.GetConversationHistoryResponse
		err := a.do(ctx, "conversations.history", func(ctx context.Context) error {
			var err error
			res, err = a.api.GetConversationHistoryContext(ctx, &slackapi.GetConversationHistoryParameters{
				ChannelID: channel, Latest: ts, Inclusive: false, Limit: min(limit+1, pageSize), Cursor: cursor,
				IncludeAllMetadata: true})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("conversations.history: %w", err)
		}
		for _, msg := range res.Messages {
			if msg.Timestamp != ts {
				all = append(all, msg)
			}
		}
		if !res.HasMore || res.ResponseMetaData.NextCursor == "" || enough(all, limit, botUser, botID) {
			break
		}
		cursor = res.ResponseMetaData.NextCursor
	}
	return all, nil
}

// enough reports whether msgs (newest first) reach back to the bot's last
// word or hold limit messages that show.
func enough(msgs []slackapi.Message, limit int, botUser, botID string) bool {
	n := 0
	for _, msg := range msgs {
		if activity(msg, botUser, botID) {
			continue
		}
		if mine(msg, botUser, botID) || asksBot(msg, botUser) {
			return true
		}
		if shown(msg) {
			n++
		}
	}
	return n >= limit
}

// said is msg as a line of context.
func (a *Adapter) said(msg slackapi.Message, names map[string]string, botUser, botID string) core.Said {
	s := core.Said{Bot: mine(msg, botUser, botID), Text: plainText(msg.Text, names)}
	switch {
	case s.Bot:
		s.Author = a.botName()
	case msg.User != "":
		s.Author = names[msg.User]
	}
	if s.Author == "" { // another app's message, or a name not learned
		s.Author = firstNonEmpty(msg.Username, botProfileName(msg), msg.User, "someone")
	}
	for _, f := range msg.Files {
		s.Files = append(s.Files, firstNonEmpty(f.Name, f.Title, f.ID))
	}
	return s
}

func botProfileName(msg slackapi.Message) string {
	if msg.BotProfile != nil {
		return msg.BotProfile.Name
	}
	return ""
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// plainText is a message's text as the agent reads it in the context:
// Slack's markup spelled as plain text, so that nothing in it addresses
// anyone or links anywhere when quoted back: <@U123> and <@U123|ann> are
// "@" and the name (names, else the label, else the id), <!here>,
// <!channel> and <!everyone> "@here", "@channel" and "@everyone",
// <!subteam^S1|@team> "@team", <#C123|general> "#general", <url|label>
// "label (url)", a date its fallback text; &lt; &gt; &amp; decoded.
func plainText(text string, names map[string]string) string {
	text = slackMarkup.ReplaceAllStringFunc(text, func(tag string) string {
		target, label, _ := strings.Cut(tag[1:len(tag)-1], "|")
		switch {
		case strings.HasPrefix(target, "@"):
			id := target[1:]
			return "@" + strings.TrimPrefix(firstNonEmpty(names[id], label, id), "@")
		case strings.HasPrefix(target, "#"):
			return "#" + strings.TrimPrefix(firstNonEmpty(label, target[1:]), "#")
		case strings.HasPrefix(target, "!subteam^"):
			return "@" + strings.TrimPrefix(firstNonEmpty(label, "group"), "@")
		case strings.HasPrefix(target, "!date^"):
			return firstNonEmpty(label, "a date")
		case strings.HasPrefix(target, "!"):
			return "@" + strings.TrimPrefix(firstNonEmpty(label, strings.TrimPrefix(target, "!")), "@")
		case strings.HasPrefix(target, "mailto:"):
			return firstNonEmpty(label, strings.TrimPrefix(target, "mailto:"))
		case label != "" && label != target:
			return label + " (" + target + ")"
		}
		return target
	})
	return unescaper.Replace(text)
}
