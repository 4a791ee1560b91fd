package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/retry"
)

// The values of slack.streaming.
const (
	StreamEdits  = "edits"  // chat.postMessage, then chat.update (the default)
	StreamNative = "native" // chat.startStream, appendStream, stopStream
)

// The values of slack.tool_activity.
const (
	ActivityReplies = "replies" // a reply in the answer's thread per batch of tool calls (the default)
	ActivityTasks   = "tasks"   // a task card per tool call inside the streamed answer
)

// MaxStreamLen is the most one streamed message holds, in characters of
// its markdown: an answer longer than that continues in a new streamed
// message in the same thread.
const MaxStreamLen = 12000

// corePlaceholder is the text core's streamer posts when an answer has to
// exist before the agent wrote any (a tool call first). A stream can only
// grow, so it is opened empty instead; TestNativeToolFirst fails if core's
// text changes.
const corePlaceholder = "⏳ _working…_"

// stream is one streamed answer message.
type stream struct {
	sent   string // the markdown appended so far
	open   bool   // still streaming: grown by appends, not by chat.update
	answer string // channel/ts of the message it answers, its answer's key
	// final is the message's final text, held back by Edit so that the
	// stop carries what it adds (held); see holdFinal.
	final string
	held  bool
	// unstopped is a stop that failed past its retries: the message may
	// still be streaming, which chat.update cannot change.
	unstopped bool
}

// asker is who sent a message that an answer may reply to.
type asker struct{ user, team string }

func streamKey(channel, ts string) string { return channel + "/" + ts }

// noteAsker remembers who sent m, for the stream that answers it
// (recipient_user_id and recipient_team_id).
func (a *Adapter) noteAsker(m core.Message) {
	if a.opts.Streaming != StreamNative || m.ID == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.askers.put(streamKey(m.Channel, m.ID), asker{user: m.User, team: m.Workspace})
}

// startStream opens a streamed message with text as the answer to to: a
// reply in the thread of the message that asked (or in to.Thread). It
// returns ok false when this answer is to be posted and edited instead: a
// place with nothing to reply to, no start free in the Tier 2 budget, or
// a stream Slack refused to start (remembered for the answer's
// continuations). A continuation of a streamed answer waits for a start,
// and is posted in the same thread if refused one.
func (a *Adapter) startStream(ctx context.Context, to core.Place, text string) (core.MessageRef, bool, error) {
	thread := to.Thread
	if thread == "" {
		thread = to.ReplyTo
	}
	if thread == "" {
		return core.MessageRef{}, false, nil
	}
	key := streamKey(to.Channel, to.ReplyTo)
	a.mu.Lock()
	who, refused, reserved := a.askers.get(key), a.refused.get(key), a.reserved.get(key)
	a.reserved.del(key)
	a.mu.Unlock()
	if refused {
		return core.MessageRef{}, false, nil
	}
	if to.Continues {
		// The answer streamed so far: its continuation waits for a start
		// and, refused one, is posted in the same thread.
		if err := a.streamStarts.wait(ctx); err != nil {
			return core.MessageRef{}, true, err
		}
	} else if !reserved && !a.streamStarts.take() {
		// chat.startStream is Tier 2 (20+ a minute for the workspace):
		// an answer that would wait for a start is posted and edited at
		// once instead, so many answers at once show their first text no
		// later than with edits.
		a.log.Debug("slack: no stream start free; this answer is posted and edited", "channel", to.Channel)
		a.refuse(key)
		return core.MessageRef{}, false, nil
	}
	md := text
	if md == corePlaceholder {
		md = ""
	}
	opts := []slackapi.MsgOption{slackapi.MsgOptionTS(thread)}
	if who.user != "" {
		opts = append(opts, slackapi.MsgOptionRecipientUserID(who.user))
	}
	if team := who.team; team != "" {
		opts = append(opts, slackapi.MsgOptionRecipientTeamID(team))
	}
	if md != "" {
		opts = append(opts, slackapi.MsgOptionMarkdownText(md))
	}
	if a.opts.ToolActivity == ActivityTasks {
		opts = append(opts, slackapi.MsgOptionTaskDisplayMode(slackapi.TaskDisplayModeTimeline))
	}
	var ts string
	// chat.startStream has no idempotency key, like chat.postMessage; a
	// start that fails is not repeated but falls back to edits, so a
	// failure cannot leave two streams.
	call := retry.Call{Method: "chat.startStream", RateLimited: a.streamStarts.pause}
	err := a.retry.Do(ctx, call, func(ctx context.Context) error {
		var err error
		_, ts, err = a.api.StartStreamContext(ctx, to.Channel, opts...)
		return err
	})
	if err != nil {
		a.log.Warn("slack: a stream did not start; this answer is posted and edited", "channel", to.Channel, "err", err)
		if to.Continues {
			ts, err := a.post(ctx, to.Channel, thread, text)
			if err != nil {
				return core.MessageRef{}, true, fmt.Errorf("slack: post an answer: %w", err)
			}
			return core.MessageRef{Channel: to.Channel, Thread: thread, ID: ts}, true, nil
		}
		a.refuse(key)
		return core.MessageRef{}, false, nil
	}
	a.statusCleared(to.Channel, thread)
	a.mu.Lock()
	a.streams[streamKey(to.Channel, ts)] = &stream{sent: md, open: true, answer: key}
	a.latest[key] = ts
	a.mu.Unlock()
	return core.MessageRef{Channel: to.Channel, Thread: thread, ID: ts}, true, nil
}

// refuse remembers that the answer to the message at key is posted and
// edited, continuations included.
func (a *Adapter) refuse(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refused.put(key, true)
}

// streamOf is msg's stream, nil for a message that was posted.
func (a *Adapter) streamOf(msg core.MessageRef) *stream {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.streams[streamKey(msg.Channel, msg.ID)]
}

// growStream brings the streamed message msg up to the markdown latest
// gives, appending only what is new. It reports false when the message is
// no longer streaming, or the new text does not extend what was appended
// (the placeholder's answer, a notice after a closed code fence): the
// stream is then stopped and the caller updates the message instead.
// Only the answer's own goroutine calls it for one message.
func (a *Adapter) growStream(ctx context.Context, msg core.MessageRef, st *stream, latest func() string) (bool, error) {
	if !st.open {
		return false, nil
	}
	var text string
	// The first attempt takes an append only if one is free now: with many
	// streams at once the text waits for this stream's next growth (or its
	// stop), coalesced, instead of the answer waiting in line. A retry
	// waits for the budget like any call.
	first := true
	call := retry.Call{Method: "chat.appendStream", RateLimited: a.appends.pause,
		Before: func(ctx context.Context) (func(), error) {
			if first {
				first = false
				if !a.appends.take() {
					return nil, errNoAppend
				}
				return nil, nil
			}
			return nil, a.appends.wait(ctx)
		}}
	grown := true
	err := a.retry.Do(ctx, call, func(ctx context.Context) error {
		text = latest()
		if !strings.HasPrefix(text, st.sent) {
			grown = false
			return nil
		}
		delta := text[len(st.sent):]
		if delta == "" {
			return nil
		}
		_, _, err := a.api.AppendStreamContext(ctx, msg.Channel, msg.ID, slackapi.MsgOptionMarkdownText(delta))
		return err
	})
	switch {
	case errors.Is(err, errNoAppend):
		return true, nil // latest not taken: the streamer tries again
	case isCode(err, "message_not_in_streaming_state"):
		a.log.Info("slack: a stream ended under the answer; carrying on with chat.update", "channel", msg.Channel, "ts", msg.ID)
		st.open = false
		return false, nil
	case err != nil:
		// Whether it landed is unknown: an append repeated could double
		// text. The message is stopped and updated, so its text is exact.
		a.log.Warn("slack: an append failed; carrying on with chat.update", "channel", msg.Channel, "ts", msg.ID, "err", err)
		_ = a.stopStream(ctx, msg, st)
		return false, nil
	case !grown:
		_ = a.stopStream(ctx, msg, st)
		return false, nil
	}
	st.sent = text
	return true, nil
}

// holdFinal takes text, the final text core's streamer gives an open
// stream with Edit (the streamer's growth goes through EditLatest), when
// it extends what was streamed: End then sends what it adds with the stop,
// one call where an append and a stop would be two.
func (a *Adapter) holdFinal(msg core.MessageRef, text string) bool {
	st := a.streamOf(msg)
	if st == nil || !st.open || !strings.HasPrefix(text, st.sent) {
		return false
	}
	st.final, st.held = text, true
	return true
}

// errNoAppend is a growth put off: no append was free in the budget.
var errNoAppend = errors.New("no chat.appendStream free now")

// stopStream ends msg's stream, if still open, with the final text held
// back, if any. A stream that ended under it (or a stop that failed) has
// its final text put in by chat.update instead.
func (a *Adapter) stopStream(ctx context.Context, msg core.MessageRef, st *stream) error {
	if !st.open {
		return nil
	}
	st.open = false
	var opts []slackapi.MsgOption
	held := st.held
	if delta := st.final[min(len(st.sent), len(st.final)):]; held && delta != "" {
		opts = append(opts, slackapi.MsgOptionMarkdownText(delta))
	}
	call := retry.Call{Method: "chat.stopStream", Idempotent: true, RateLimited: a.streamStops.pause,
		Before: func(ctx context.Context) (func(), error) { return nil, a.streamStops.wait(ctx) }}
	expired := false
	err := a.retry.Do(ctx, call, func(ctx context.Context) error {
		_, _, err := a.api.StopStreamContext(ctx, msg.Channel, msg.ID, opts...)
		expired = isCode(err, "message_not_in_streaming_state")
		return slackOK(err, "message_not_in_streaming_state")
	})
	st.unstopped = err != nil
	if held && (expired || err != nil) {
		// A repeated stop that finds the stream ended may have landed the
		// text: chat.update makes it exact either way.
		return a.updateHeld(ctx, msg, st)
	}
	if err != nil {
		return fmt.Errorf("slack: stop a stream: %w", err)
	}
	return nil
}

// updateHeld puts the final text held back for msg's ended stream in by
// chat.update. A failed update keeps it held, so that End repeated (core
// repeats it as it repeats a final edit) tries again.
func (a *Adapter) updateHeld(ctx context.Context, msg core.MessageRef, st *stream) error {
	final := st.final
	st.held = false
	if err := a.EditLatest(ctx, msg, func() string { return final }); err != nil {
		st.held = true
		return fmt.Errorf("slack: the final text of an ended stream: %w", err)
	}
	return nil
}

// End implements core.Ender: it stops the stream of an answer's message
// once its final text is in; a posted message has nothing to end. When
// the final text it held could not be put in (the stop and then
// chat.update failed past their retries), it says so and keeps the text:
// End called again tries again.
func (a *Adapter) End(ctx context.Context, msg core.MessageRef) error {
	if msg.Thread != "" {
		a.clearStatus(ctx, msg.Channel, msg.Thread)
	}
	st := a.streamOf(msg)
	if st == nil {
		return nil
	}
	if st.held && st.unstopped {
		st.open = true // End again: the stop again, with the text
	}
	var err error
	if st.open {
		err = a.stopStream(ctx, msg, st)
	} else if st.held {
		err = a.updateHeld(ctx, msg, st)
	}
	if err != nil && st.held {
		return err
	}
	a.mu.Lock()
	delete(a.streams, streamKey(msg.Channel, msg.ID))
	if a.latest[st.answer] == msg.ID {
		delete(a.latest, st.answer)
	}
	a.mu.Unlock()
	return err
}

// Step implements core.Stepper. With streaming native, a tool call sets
// the thread's status line to what it does, kept up while it runs (see
// setStatus); with tool_activity tasks it is also a task card in the
// answer's newest stream: in_progress at the call, complete or error with
// its output at the result. A call is left to the activity replies where
// the answer does not stream (posted instead, or ended under it).
func (a *Adapter) Step(ctx context.Context, answer core.MessageRef, s core.Step) bool {
	if a.opts.Streaming != StreamNative {
		return false
	}
	if answer.Thread != "" {
		if s.Done {
			a.toolDone(answer.Channel, answer.Thread)
		} else {
			a.setStatus(ctx, answer.Channel, answer.Thread, statusLine(s))
		}
	}
	if a.opts.ToolActivity != ActivityTasks || s.ID == "" {
		return false
	}
	msg, st := a.newestStream(answer)
	if st == nil || !st.open {
		return false
	}
	return a.appendTask(ctx, msg, st, taskChunk(s))
}

// newestStream is the stream an answer whose first message is first grows
// now: its continuation's, once it has one.
func (a *Adapter) newestStream(first core.MessageRef) (core.MessageRef, *stream) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.streams[streamKey(first.Channel, first.ID)]
	if st == nil {
		return first, nil
	}
	if ts, ok := a.latest[st.answer]; ok && a.streams[streamKey(first.Channel, ts)] != nil {
		first.ID = ts
		st = a.streams[streamKey(first.Channel, ts)]
	}
	return first, st
}

// appendTask appends one task_update chunk to msg's stream and reports
// whether it is there. An expired stream, or an append of unknown outcome
// (the stream is then stopped, as in growStream), leaves the call to an
// activity reply.
func (a *Adapter) appendTask(ctx context.Context, msg core.MessageRef, st *stream, task slackapi.TaskUpdateChunk) bool {
	call := retry.Call{Method: "chat.appendStream", RateLimited: a.appends.pause,
		Before: func(ctx context.Context) (func(), error) { return nil, a.appends.wait(ctx) }}
	err := a.retry.Do(ctx, call, func(ctx context.Context) error {
		_, _, err := a.api.AppendStreamContext(ctx, msg.Channel, msg.ID, slackapi.MsgOptionChunks(task))
		return err
	})
	switch {
	case isCode(err, "message_not_in_streaming_state"):
		a.log.Info("slack: a stream ended under the answer; carrying on with chat.update", "channel", msg.Channel, "ts", msg.ID)
		st.open = false
		return false
	case err != nil:
		a.log.Warn("slack: a task update failed; the tool call is posted in the thread", "channel", msg.Channel, "ts", msg.ID, "err", err)
		_ = a.stopStream(ctx, msg, st)
		return false
	}
	return true
}

// MaxTaskOutput is the most characters of a task card's output (Slack's
// limit).
const MaxTaskOutput = 256

// taskChunk is the task_update chunk of a tool call or its result.
func taskChunk(s core.Step) slackapi.TaskUpdateChunk {
	title := s.Name
	if s.Summary != "" {
		title += ": " + s.Summary
	}
	t := slackapi.NewTaskUpdateChunk(s.ID, cutRunes(title, MaxTaskOutput))
	switch {
	case !s.Done:
		t.Status = slackapi.TaskCardStatusInProgress
	case s.Failed:
		t.Status = slackapi.TaskCardStatusError
	default:
		t.Status = slackapi.TaskCardStatusComplete
	}
	if s.Done {
		t.Output = shortOutput(s.Output, MaxTaskOutput)
	}
	return t
}

// shortOutput is a tool's output within limit characters: its end, where
// a command's verdict is, after "…" when cut.
func shortOutput(out string, limit int) string {
	out = strings.TrimSpace(out)
	r := []rune(out)
	if len(r) <= limit {
		return out
	}
	return "…" + strings.TrimLeft(string(r[len(r)-limit+1:]), " \n")
}

// cutRunes is s within limit characters, ending in "…" when cut.
func cutRunes(s string, limit int) string {
	r := []rune(s)
	if len(r) <= limit {
		return s
	}
	return string(r[:limit-1]) + "…"
}

// isCode reports whether err is Slack's ok:false answer code.
func isCode(err error, code string) bool {
	se, ok := errors.AsType[slackapi.SlackErrorResponse](err)
	return ok && se.Err == code
}

// measureNative counts what both a stream (markdown) and a posted
// fallback (mrkdwn) hold, so that a chunk fits either.
func measureNative(markdown string) int {
	return max(utf8.RuneCountInString(markdown), utf8.RuneCountInString(Mrkdwn(markdown)))
}
