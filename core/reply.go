package core

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/golem-chat/golem/internal/retry"
	"github.com/golem-chat/golem/parser"
)

// placeholder is the answer's text before the agent has written any: a
// tool call needs a message to thread its activity under.
const placeholder = "⏳ _working…_"

// maxActivityLines caps one tool-activity post; the rest are counted.
const maxActivityLines = 15

// Reply streams one turn's events into platform messages: the first text
// at once, later text by edits no more often than the adapter allows
// (coalesced: only the newest text is ever sent), continuation messages
// past the length limit, tool activity batched under the answer, and the
// exact final text with a notice for stop, timeout and error.
//
// Add and Finish are called from the turn's goroutine; all platform calls
// happen on the Reply's own goroutine, one at a time, so a slow platform
// delays only this answer and never queues stale edits.
type Reply struct {
	a        Poster
	place    Place
	lim      Limits
	log      *slog.Logger
	onAnswer func(MessageRef) // called once, on the pump, when the answer exists

	mu        sync.Mutex
	text      strings.Builder
	afterTool bool            // a tool ran since the last text: start a new paragraph
	tools     []string        // activity lines not yet posted
	requeued  func([]string)  // told of the lines put back for the post interval (tests)
	steps     []Step          // tool calls and results not yet shown, with a Stepper
	calls     map[string]Step // the calls of the turn by id, with a Stepper
	notice    string          // set by Finish
	finished  bool
	flushes   []chan MessageRef // Flush calls waiting for the pump

	wake chan struct{}
	done chan struct{}

	// Owned by the pump goroutine.
	msgs         []sentMessage
	lastActivity time.Time
	drafter      Drafter // nil: edit messages
	stepper      Stepper // nil: tool calls are activity lines only
	draft        sentMessage
}

type sentMessage struct {
	ref  MessageRef
	text string
	at   time.Time
}

// NewReply starts the streamer for one answer at place. ctx bounds every
// platform call (it is the dispatcher's life, not the turn's: a stopped turn
// still gets its final text). onAnswer, if not nil, learns the answer
// message once it is posted.
func NewReply(ctx context.Context, a Poster, place Place, log *slog.Logger, onAnswer func(MessageRef)) *Reply {
	r := &Reply{
		a: a, place: place, lim: a.Limits(), log: log, onAnswer: onAnswer,
		wake: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
	if d, ok := a.(Drafter); ok && place.ReplyTo != "" && d.CanDraft(place) {
		r.drafter = d
	}
	if s, ok := a.(Stepper); ok {
		r.stepper, r.calls = s, map[string]Step{}
	}
	if r.lim.MaxLen <= 0 {
		r.lim.MaxLen = 4000
	}
	go r.pump(ctx)
	return r
}

// Add takes events of the turn, in order; one call for what the engine had
// ready at once wakes the streamer once. It never blocks on the platform.
func (r *Reply) Add(evs ...parser.Event) {
	changed := false
	r.mu.Lock()
	for _, ev := range evs {
		switch ev.Type {
		case parser.Text:
			if ev.Content == "" {
				continue
			}
			if r.afterTool && r.text.Len() > 0 && !strings.HasSuffix(r.text.String(), "\n\n") {
				r.text.WriteString("\n\n")
			}
			r.afterTool = false
			r.text.WriteString(ev.Content)
		case parser.ToolCall:
			line := ToolLine(ev.Name, ev.Args)
			if r.stepper == nil {
				r.tools = append(r.tools, line)
			} else {
				step := Step{ID: ev.ID, Name: ev.Name, Summary: argSummary(ev.Args), Line: line}
				r.calls[ev.ID] = step
				r.steps = append(r.steps, step)
			}
			r.afterTool = true
		case parser.ToolResult:
			step, ok := r.calls[ev.ID]
			if r.stepper == nil || !ok {
				continue
			}
			delete(r.calls, ev.ID)
			step.Done, step.Failed, step.Output = true, ev.IsError, ev.Content
			r.steps = append(r.steps, step)
		case parser.Warning:
			if r.stepper == nil {
				r.tools = append(r.tools, "⚠️ "+ev.Message)
			} else { // in its place among the steps
				r.steps = append(r.steps, Step{Line: "⚠️ " + ev.Message, warning: true})
			}
		default:
			continue
		}
		changed = true
	}
	r.mu.Unlock()
	if changed {
		r.poke()
	}
}

// Finish delivers the final text followed by notice (may be empty) and
// waits until it is on the platform or ctx (of NewReply) ends.
func (r *Reply) Finish(notice string) {
	r.mu.Lock()
	r.notice = notice
	r.finished = true
	r.mu.Unlock()
	r.poke()
	<-r.done
}

// Flush returns once what was added before it is on the platform — the
// answer's first message posted (the placeholder when no text came yet)
// and the tool activity posted — with the message that what goes under
// the answer (a question) anchors to. Edits of the answer's text need not
// have happened: the message is there, above what comes next. It gives up
// after wait or when the Reply has ended, returning the zero MessageRef.
// Safe to call from any goroutine.
func (r *Reply) Flush(wait time.Duration) MessageRef {
	ch := make(chan MessageRef, 1)
	r.mu.Lock()
	r.flushes = append(r.flushes, ch)
	r.mu.Unlock()
	r.poke()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case ref := <-ch:
		return ref
	case <-r.done:
	case <-t.C:
	}
	select {
	case ref := <-ch:
		return ref
	default:
		return MessageRef{}
	}
}

// Notice returns the line appended to an answer that ended with ev. It
// branches on ev.Reason, never on the message: a CLI's own error reads
// "⚠️ **Error:** ..." whatever it says. An interrupted turn's message is
// golem's own notice and is returned as it is.
func Notice(ev parser.Event, timeout time.Duration) string {
	if ev.Type == parser.Done {
		return ""
	}
	switch ev.Reason {
	case parser.Stopped:
		return "⏹️ _Stopped._"
	case parser.TimedOut:
		return fmt.Sprintf("⏱️ _Timed out after %s; the agent was stopped._", timeout)
	case parser.Interrupted:
		return ev.Message
	}
	return "⚠️ **Error:** " + ev.Message
}

func (r *Reply) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *Reply) pump(ctx context.Context) {
	defer close(r.done)
	var timer *time.Timer
	var due <-chan time.Time
	// textDue is when the edit interval lets the text go out again: until
	// then a wake (every delta the agent writes) does not split and
	// measure the whole text anew, which for many answers at once is most
	// of golem's work.
	var textDue time.Time
	for {
		select {
		case <-r.wake:
		case <-due:
		case <-ctx.Done():
			return
		}
		r.mu.Lock()
		text, finished, notice := r.text.String(), r.finished, r.notice
		tools, steps := r.tools, r.steps
		r.tools, r.steps = nil, nil
		r.mu.Unlock()

		if finished {
			tools = append(tools, r.showSteps(ctx, steps)...) // the lines put back are older
			r.finish(ctx, text, notice, tools)
			return
		}
		wait := time.Until(textDue)
		if wait <= 0 {
			wait = r.flushText(ctx, text)
			textDue = time.Now().Add(wait)
		}
		tools = append(tools, r.showSteps(ctx, steps)...) // the lines put back are older
		if w := r.flushTools(ctx, tools); w > 0 && (wait == 0 || w < wait) {
			wait = w
		}
		if w := r.answerFlushes(ctx); w > 0 && (wait == 0 || w < wait) {
			wait = w
		}
		due = nil
		if wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			due = timer.C
		}
	}
}

// answerFlushes answers the Flush calls waiting once no tool activity is
// left to post and the answer has a message (posting the placeholder if
// it has none yet), and returns how long to wait before trying again when
// the post failed.
func (r *Reply) answerFlushes(ctx context.Context) time.Duration {
	r.mu.Lock()
	flushes := r.flushes
	if len(r.tools) > 0 { // waiting for the post interval: the pump comes back
		flushes = nil
	}
	if len(flushes) > 0 {
		r.flushes = nil
	}
	r.mu.Unlock()
	if len(flushes) == 0 {
		return 0
	}
	if len(r.msgs) == 0 && r.drafter == nil && r.send(ctx, placeholder) != nil {
		r.mu.Lock()
		r.flushes = append(flushes, r.flushes...)
		r.mu.Unlock()
		return time.Second
	}
	for _, ch := range flushes {
		ch <- r.anchor()
	}
	return 0
}

// flushText brings the posted messages up to text where the edit interval
// allows, and returns how long to wait before trying again (0: nothing
// pending).
func (r *Reply) flushText(ctx context.Context, text string) time.Duration {
	if text == "" {
		return 0
	}
	chunks := Split(text, r.lim.MaxLen, r.a.Measure)
	if r.drafter != nil {
		if len(chunks) == 1 {
			return r.flushDraft(ctx, chunks[0])
		}
		r.drafter = nil // past one message: post and edit as usual
	}
	var wait time.Duration
	for i, chunk := range chunks {
		if i >= len(r.msgs) {
			if r.send(ctx, chunk) != nil {
				return time.Second // retry the post later
			}
			continue
		}
		m := &r.msgs[i]
		if m.text == chunk {
			continue
		}
		if left := r.lim.MinEditInterval - time.Since(m.at); left > 0 {
			if wait == 0 || left < wait {
				wait = left
			}
			continue
		}
		if le, ok := r.a.(LatestEditor); ok {
			r.editLatest(ctx, le, i)
		} else {
			r.edit(ctx, i, chunk)
		}
	}
	return wait
}

// flushDraft shows text as the answer's draft when the edit interval
// allows, and returns how long to wait when it does not.
func (r *Reply) flushDraft(ctx context.Context, text string) time.Duration {
	if r.draft.text == text {
		return 0
	}
	if left := r.lim.MinEditInterval - time.Since(r.draft.at); left > 0 {
		return left
	}
	r.draft.at = time.Now()
	if err := r.drafter.Draft(ctx, r.place, text); err != nil {
		r.log.Debug("drafts unavailable; editing messages instead", "err", err)
		r.drafter = nil
		return r.flushText(ctx, text)
	}
	r.draft.text = text
	return 0
}

// editLatest edits message i with the newest text of its chunk at the
// moment the adapter's budget allows the call.
func (r *Reply) editLatest(ctx context.Context, le LatestEditor, i int) {
	m := &r.msgs[i]
	var sent string
	err := le.EditLatest(ctx, m.ref, func() string {
		r.mu.Lock()
		text := r.text.String()
		r.mu.Unlock()
		chunks := Split(text, r.lim.MaxLen, r.a.Measure)
		sent = chunks[min(i, len(chunks)-1)]
		return sent
	})
	m.at = time.Now()
	if err != nil {
		r.log.Warn("edit answer", "err", err)
		return
	}
	m.text = sent
}

// showSteps hands the tool calls and results to the Stepper, once the
// answer has a message (posting the placeholder if it has none yet), and
// returns the activity lines of the calls it did not show in the answer.
func (r *Reply) showSteps(ctx context.Context, steps []Step) []string {
	if len(steps) == 0 {
		return nil
	}
	if len(r.msgs) == 0 && r.drafter == nil && r.send(ctx, placeholder) != nil {
		var lines []string // no answer to show them in: activity lines
		for _, s := range steps {
			if !s.Done {
				lines = append(lines, s.Line)
			}
		}
		return lines
	}
	var lines []string
	for _, s := range steps {
		if s.warning {
			lines = append(lines, s.Line)
			continue
		}
		if !r.stepper.Step(ctx, r.anchor(), s) && !s.Done {
			lines = append(lines, s.Line)
		}
	}
	return lines
}

// flushTools posts pending activity lines as one message when the post
// interval allows; lines that must wait are put back. It returns how long
// until the next post is allowed when lines wait.
func (r *Reply) flushTools(ctx context.Context, tools []string) time.Duration {
	if len(tools) == 0 {
		return 0
	}
	if left := r.lim.MinPostInterval - time.Since(r.lastActivity); left > 0 {
		r.requeue(tools)
		return left
	}
	if len(r.msgs) == 0 && r.drafter == nil && r.send(ctx, placeholder) != nil {
		r.requeue(tools)
		return time.Second
	}
	r.postActivity(ctx, tools)
	return 0
}

// anchor is the message tool activity goes under: the answer, or while it
// is a draft, the user's message.
func (r *Reply) anchor() MessageRef {
	if len(r.msgs) > 0 {
		return r.msgs[0].ref
	}
	return MessageRef{Channel: r.place.Channel, Thread: r.place.Thread, ID: r.place.ReplyTo}
}

func (r *Reply) requeue(tools []string) {
	r.mu.Lock()
	r.tools = append(tools, r.tools...)
	told := r.requeued
	r.mu.Unlock()
	if told != nil {
		told(tools)
	}
}

func (r *Reply) postActivity(ctx context.Context, tools []string) {
	lines := tools
	if len(lines) > maxActivityLines {
		lines = append(lines[:maxActivityLines:maxActivityLines], fmt.Sprintf("_… and %d more_", len(tools)-maxActivityLines))
	}
	// Cut to one message as the adapter measures it (Telegram's rendered
	// length can pass the limit while the runes do not).
	body := Split(strings.Join(lines, "\n"), r.lim.MaxLen, r.a.Measure)[0]
	r.lastActivity = time.Now()
	if err := r.a.SendActivity(ctx, r.anchor(), body); err != nil {
		r.log.Warn("post tool activity", "err", err)
	}
}

// finish delivers the exact final text: every chunk posted or edited,
// waiting out the edit interval rather than skipping, retrying a failed
// call, and posting anew what cannot be edited.
func (r *Reply) finish(ctx context.Context, text, notice string, tools []string) {
	if len(tools) > 0 {
		if len(r.msgs) == 0 && r.drafter == nil {
			r.send(ctx, placeholder)
		}
		if len(r.msgs) > 0 || r.drafter != nil {
			if left := r.lim.MinPostInterval - time.Since(r.lastActivity); left > 0 {
				_ = retry.Wait(ctx, left)
			}
			r.postActivity(ctx, tools)
		}
	}
	final := text
	if notice != "" {
		if final != "" {
			// A notice inside a code block the answer left open would
			// show as code: close the block first.
			final = closeFence(final, openFence("", final)) + "\n\n"
		}
		final += notice
	}
	if final == "" {
		final = "✅ _Done._"
	}
	for i, chunk := range Split(final, r.lim.MaxLen, r.a.Measure) {
		// Three tries, a second and then two apart (the adapter retried
		// each already); an edit that fails them all is posted anew.
		backoff := retry.Backoff{First: time.Second, Max: 2 * time.Second, Log: r.log, Method: "final text"}
		for ctx.Err() == nil {
			var err error
			if i >= len(r.msgs) {
				if err = r.send(ctx, chunk); err == nil {
					break
				}
			} else {
				m := &r.msgs[i]
				if m.text == chunk {
					break
				}
				_ = retry.Wait(ctx, r.lim.MinEditInterval-time.Since(m.at))
				if err = r.edit(ctx, i, chunk); err == nil {
					break
				}
				if backoff.Attempts() == 2 { // the message cannot be edited: post the text anew
					_ = r.send(ctx, chunk)
					break
				}
			}
			if backoff.Attempts() == 2 {
				break
			}
			_ = backoff.Wait(ctx, "deliver the final text, retrying", "failed", err)
		}
	}
	if e, ok := r.a.(Ender); ok {
		for _, m := range r.msgs {
			r.end(ctx, e, m.ref)
		}
	}
}

// end ends one message of the answer. An Ender may deliver the final text
// with End, so a failed End is repeated as a final edit is: three tries,
// a second and then two apart (the adapter retried each already).
func (r *Reply) end(ctx context.Context, e Ender, ref MessageRef) {
	backoff := retry.Backoff{First: time.Second, Max: 2 * time.Second, Log: r.log, Method: "end answer"}
	for {
		err := e.End(ctx, ref)
		if err == nil {
			return
		}
		if backoff.Attempts() == 2 || ctx.Err() != nil {
			r.log.Warn("end answer", "err", err)
			return
		}
		_ = backoff.Wait(ctx, "end the answer, retrying", "failed", err)
	}
}

func (r *Reply) send(ctx context.Context, text string) error {
	to := r.place
	to.Continues = len(r.msgs) > 0
	ref, err := r.a.Send(ctx, to, text)
	if err != nil {
		r.log.Warn("post answer", "err", err)
		return err
	}
	r.msgs = append(r.msgs, sentMessage{ref: ref, text: text, at: time.Now()})
	if len(r.msgs) == 1 && r.onAnswer != nil {
		r.onAnswer(ref)
	}
	return nil
}

func (r *Reply) edit(ctx context.Context, i int, text string) error {
	m := &r.msgs[i]
	err := r.a.Edit(ctx, m.ref, text)
	m.at = time.Now()
	if err != nil {
		r.log.Warn("edit answer", "err", err)
		return err
	}
	m.text = text
	return nil
}

// ToolLine renders one tool call as a short Markdown line: an icon, the
// tool's name and the most telling argument, e.g. "🔧 **Bash** — `go test ./...`".
func ToolLine(name string, args json.RawMessage) string {
	icon := "🔧"
	switch strings.ToLower(name) {
	case "read", "readfile", "view":
		icon = "📖"
	case "edit", "write", "multiedit", "notebookedit", "editfile", "writefile", "delete":
		icon = "✏️"
	case "glob", "grep", "search", "ls", "list", "find", "codebasesearch":
		icon = "🔎"
	case "webfetch", "websearch", "fetch":
		icon = "🌐"
	case "task", "agent", "todowrite", "updatetodos":
		icon = "📋"
	}
	line := icon + " **" + name + "**"
	if s := argSummary(args); s != "" {
		line += " — `" + s + "`"
	}
	return line
}

// argSummary picks the argument a person wants to see first, on one line,
// at most 80 runes, without backticks (it goes inside a code span).
func argSummary(args json.RawMessage) string {
	var m map[string]any
	if len(args) == 0 || json.Unmarshal(args, &m) != nil {
		return ""
	}
	var s string
	for _, k := range []string{"command", "file_path", "path", "filePath", "pattern", "globPattern", "query", "url", "description", "prompt"} {
		if v, ok := m[k].(string); ok && v != "" {
			s = v
			break
		}
	}
	if s == "" {
		return ""
	}
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "`", "'")), " ")
	return cut(s, 80)
}
