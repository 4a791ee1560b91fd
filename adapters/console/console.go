// Package console is golem's terminal chat, the adapter behind `bot run`:
// each line read is a message to the agent (or a chat command such as
// /status or /stop), and the answer is printed as it streams, with tool
// calls as short lines.
package console

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/store"
)

// Defaults for Options.
const (
	DefaultUser         = "console"
	DefaultConversation = "console"
	prompt              = "> "
	continuation        = ". "
)

// Options configure a Console.
type Options struct {
	// User is the sender of every message (the console is always allowed);
	// default DefaultUser.
	User string
	// Conversation is the channel of every message, so the session carries
	// over between runs of `bot run`; default DefaultConversation.
	Conversation string
}

// Console is the terminal chat. It implements core.Adapter with platform
// "console": answers to its messages arrive through their sinks; as a
// Poster it prints what comes without one (an interrupted turn's notice);
// as a core.Prompter it prints a scheduled run's answer.
type Console struct {
	in   io.Reader
	opts Options
	seq  atomic.Uint64

	mu        sync.Mutex // serializes writes to out
	out       io.Writer
	lineStart bool   // the cursor is at the start of a line
	waiting   string // the prompt shown while a line is awaited; "" while an answer prints
}

var (
	_ core.Adapter  = (*Console)(nil)
	_ core.Prompter = (*Console)(nil)
)

// New returns a console reading lines from in and writing to out.
func New(in io.Reader, out io.Writer, opts Options) *Console {
	if opts.User == "" {
		opts.User = DefaultUser
	}
	if opts.Conversation == "" {
		opts.Conversation = DefaultConversation
	}
	return &Console{in: in, out: out, opts: opts, lineStart: true}
}

// Platform returns "console".
func (c *Console) Platform() string { return "console" }

// Start reads lines and hands each to h as a message (a line ending in a
// backslash continues on the next one), then prints what the
// message causes until its terminal event before reading on, so answers
// never interleave with the prompt. It returns nil on "/quit", at the end
// of the input (after the last answer) or when ctx is done, and an error
// only when reading fails. A read in progress cannot be interrupted: on
// cancellation the goroutine reading in stays blocked until the next line
// or the end of the input.
func (c *Console) Start(ctx context.Context, h core.Handler) error {
	lines := make(chan line)
	go func() {
		defer close(lines)
		r := bufio.NewReader(c.in)
		for {
			s, err := r.ReadString('\n')
			if s != "" || err != nil {
				select {
				case lines <- line{s, err}:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()

	var pending strings.Builder // lines continued with a trailing backslash
	var typedAhead []line       // lines typed while an answer streamed
	for {
		if pending.Len() == 0 {
			c.ask(prompt)
		} else {
			c.ask(continuation)
		}
		var l line
		open := true
		if len(typedAhead) > 0 {
			// The terminal echoed it when it was typed.
			l, typedAhead = typedAhead[0], typedAhead[1:]
		} else {
			select {
			case <-ctx.Done():
				open = false
			case l, open = <-lines:
			}
		}
		c.ask("")
		if !open { // ctx is done (the reader closes lines only then)
			c.newline()
			return nil
		}
		raw := strings.TrimRight(l.text, "\r\n")
		if cont, ok := strings.CutSuffix(raw, "\\"); ok && l.err == nil {
			pending.WriteString(cont + "\n")
			continue
		}
		pending.WriteString(raw)
		text := strings.TrimSpace(pending.String())
		pending.Reset()
		switch {
		case text == "/quit" || text == "/exit":
			return nil
		case text != "":
			c.inputEnded()
			ok, ahead := c.turn(ctx, h, text, lines)
			typedAhead = append(typedAhead, ahead...)
			if !ok {
				c.newline()
				return nil
			}
		}
		if l.err != nil {
			c.newline()
			if errors.Is(l.err, io.EOF) {
				return nil
			}
			return fmt.Errorf("console: read input: %w", l.err)
		}
	}
}

// line is one line of input, or the error that ended the input.
type line struct {
	text string
	err  error
}

// turn sends one message and prints its events until the terminal one. A
// "/stop" typed meanwhile is sent at once; other lines typed meanwhile are
// returned, to be taken after the answer. It reports false when ctx ended
// first.
func (c *Console) turn(ctx context.Context, h core.Handler, text string, lines <-chan line) (bool, []line) {
	var ahead []line
	var asking *parser.Event // the permission request waiting for y/s/n
	q := c.send(ctx, h, text)
	for {
		select {
		case <-ctx.Done():
			q.Close()
			return false, ahead
		case l, open := <-lines:
			switch {
			case !open:
				lines = nil
			case strings.TrimSpace(l.text) == "/stop":
				c.send(ctx, h, "/stop").Close() // the answer's own stream shows it stopped
			case asking != nil && l.err == nil:
				if c.answer(ctx, h, asking, l.text) {
					asking = nil
				}
			default:
				ahead = append(ahead, l)
				if l.err != nil {
					lines = nil // the reader is done
				}
			}
		case <-q.Ready():
		}
		for _, ev := range q.Take() {
			c.print(ev)
			switch ev.Type {
			case parser.PermissionRequest:
				req := ev // a copy, so that not every event goes to the heap
				asking = &req
				c.write(askPrompt(ev), true)
			case parser.PermissionDecision:
				if asking != nil && asking.ID == ev.ID {
					asking = nil
				}
			}
			if ev.Terminal() {
				q.Close()
				c.write("\n", false)
				return true, ahead
			}
		}
	}
}

// send hands text to the dispatcher as the console user's message and
// returns the queue its events arrive in.
func (c *Console) send(ctx context.Context, h core.Handler, text string) *core.EventQueue {
	q := core.NewEventQueue()
	h.Handle(ctx, core.Message{
		Platform: "console",
		Channel:  c.opts.Conversation,
		// The conversation is also the thread, so that session_scope
		// "thread" keeps one session per conversation too.
		Thread:   c.opts.Conversation,
		ID:       "console-" + strconv.FormatUint(c.seq.Add(1), 10),
		User:     c.opts.User,
		UserName: c.opts.User,
		Text:     text,
		DM:       true,
		Sink:     q.Push,
	})
	return q
}

// askPrompt asks for the answer to a permission request.
func askPrompt(ev parser.Event) string {
	if ev.Name == parser.AskUserQuestion && len(ev.Questions()) > 0 {
		return fmt.Sprintf("pick? [1-%d] · [n]o ", len(ev.Questions()[0].Options))
	}
	return "allow? [y]es · [s]ession · [n]o "
}

// answer decides the request asking from a line typed at its prompt; it
// reports false (and asks again) for a line that is no answer.
func (c *Console) answer(ctx context.Context, h core.Handler, asking *parser.Event, text string) bool {
	c.inputEnded()
	verb := ""
	switch t := strings.ToLower(strings.TrimSpace(text)); {
	case t == "y" || t == "yes":
		verb = "allow"
	case t == "s" || t == "session":
		verb = "session"
	case t == "n" || t == "no":
		verb = "deny"
	case asking.Name == parser.AskUserQuestion:
		if n, err := strconv.Atoi(t); err == nil && len(asking.Questions()) > 0 && n >= 1 && n <= len(asking.Questions()[0].Options) {
			verb = "pick:" + strconv.Itoa(n-1)
		}
	}
	if verb == "" || asking.Name == parser.AskUserQuestion && (verb == "allow" || verb == "session") {
		c.write(askPrompt(*asking), true)
		return false
	}
	id := asking.ID
	data := "golem:" + verb + ":" + id
	if rest, ok := strings.CutPrefix(verb, "pick:"); ok {
		data = "golem:pick:" + id + ":" + rest
	}
	res := h.HandleAction(ctx, core.Action{Platform: "console", Channel: c.opts.Conversation, Thread: c.opts.Conversation,
		User: c.opts.User, UserName: c.opts.User, Data: data})
	if res.Err != nil {
		c.line("   " + res.Refusal)
	} else {
		c.line("   " + plain(res.Settled))
	}
	return true
}

// screen is where events are rendered: the terminal, or a page printed
// whole once it is complete.
type screen interface {
	write(s string, own bool) // s; with own, on a line of its own
	line(s string)            // s as a line of its own
	newline()                 // ends a started line
}

// print renders one event on the terminal.
func (c *Console) print(ev parser.Event) { render(c, ev) }

// render renders one event on to.
func render(c screen, ev parser.Event) {
	switch ev.Type {
	case parser.Text:
		c.write(ev.Content, false)
	case parser.ToolCall:
		c.line(plain(core.ToolLine(ev.Name, ev.Args)))
	case parser.ToolResult:
		if ev.IsError {
			c.line("   ✗ " + firstLine(ev.Content, 120))
		}
	case parser.Warning:
		c.line("⚠️  " + ev.Message)
	case parser.PermissionRequest:
		if ev.Name == parser.AskUserQuestion && len(ev.Questions()) > 0 {
			c.line("❓ " + ev.Questions()[0].Question)
			for i, o := range ev.Questions()[0].Options {
				c.line(fmt.Sprintf("   %d. %s %s", i+1, o.Label, o.Description))
			}
		} else {
			c.line("🔐 the agent asks: " + plain(core.ToolLine(ev.Name, ev.Args)))
		}
	case parser.File:
		c.line(fmt.Sprintf("📎 %s (%d bytes)", ev.File.Path, ev.File.Size))
	case parser.Done:
		c.newline()
	case parser.Error:
		switch ev.Reason {
		case parser.Stopped:
			c.line("⏹️  stopped")
		case parser.TimedOut:
			c.line("⏱️  timed out; the agent was stopped")
		default:
			c.line("❌ error: " + ev.Message)
		}
	}
}

// Limits: a terminal has no length limit or edit budget worth naming.
func (c *Console) Limits() core.Limits { return core.Limits{MaxLen: 1 << 20} }

// Measure counts runes: the terminal prints the Markdown as it is.
func (c *Console) Measure(markdown string) int { return utf8.RuneCountInString(markdown) }

// Prompted implements core.Prompter: the answer of a scheduled run (its
// "⏰ name · 09:00" line first) is gathered as it streams and printed whole
// when it ends, as a block of its own (see block), so that it never mixes
// with a line being typed. A permission request of the run shows in it, but
// only the terminal's own turns can answer one: the request waits for
// permissions.timeout.
func (c *Console) Prompted(store.Key, core.Prompt) func(...parser.Event) {
	var mu sync.Mutex
	pg := &page{lineStart: true}
	return func(evs ...parser.Event) {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range evs {
			render(pg, ev)
			if ev.Terminal() {
				c.block(pg.b.String())
				pg.b.Reset()
			}
		}
	}
}

// block prints s, text that is no answer of the terminal's own turn (a
// scheduled run's answer, a notice), on lines of its own. While a line is
// awaited it starts below the prompt's line, whatever was typed on it,
// and the prompt is shown again after it: the terminal keeps what was
// typed, and Enter sends it whole.
func (c *Console) block(s string) {
	s = strings.TrimRight(s, "\n") + "\n"
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.lineStart {
		s = "\n" + s
	}
	s += c.waiting
	_, _ = io.WriteString(c.out, s)
	c.lineStart = c.waiting == ""
}

// page is a screen that gathers what is rendered on it.
type page struct {
	b         strings.Builder
	lineStart bool
}

func (p *page) write(s string, own bool) {
	if s == "" {
		return
	}
	if own && !p.lineStart {
		s = "\n" + s
	}
	p.b.WriteString(s)
	p.lineStart = strings.HasSuffix(s, "\n")
}

func (p *page) line(s string) { p.write(s+"\n", true) }

func (p *page) newline() {
	if !p.lineStart {
		p.write("\n", false)
	}
}

// Send prints a notice that is not part of an answer (an interrupted
// turn's, for example) as a block of its own.
func (c *Console) Send(_ context.Context, to core.Place, text string) (core.MessageRef, error) {
	c.block("ℹ️  " + strings.TrimRight(text, "\n"))
	return core.MessageRef{Channel: to.Channel, Thread: to.Thread, ID: "notice-" + strconv.FormatUint(c.seq.Add(1), 10)}, nil
}

// Edit prints the new text of a notice again; a terminal cannot edit.
func (c *Console) Edit(ctx context.Context, msg core.MessageRef, text string) error {
	_, err := c.Send(ctx, core.Place{Channel: msg.Channel, Thread: msg.Thread}, text)
	return err
}

// SendActivity prints tool activity lines.
func (c *Console) SendActivity(_ context.Context, _ core.MessageRef, text string) error {
	c.line(plain(strings.TrimRight(text, "\n")))
	return nil
}

// write prints s; with own it first ends a started line.
func (c *Console) write(s string, own bool) {
	if s == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if own && !c.lineStart {
		s = "\n" + s
	}
	_, _ = io.WriteString(c.out, s)
	c.lineStart = strings.HasSuffix(s, "\n")
}

// ask shows prompt, the terminal awaiting a line; "" once a line came.
func (c *Console) ask(prompt string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiting = prompt
	if prompt != "" {
		_, _ = io.WriteString(c.out, prompt)
		c.lineStart = false
	}
}

// inputEnded notes that the user's Enter (echoed by the terminal) ended
// the prompt's line.
func (c *Console) inputEnded() {
	c.mu.Lock()
	c.lineStart = true
	c.mu.Unlock()
}

// line prints s as a line of its own.
func (c *Console) line(s string) { c.write(s+"\n", true) }

// newline ends a started line.
func (c *Console) newline() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.lineStart {
		_, _ = io.WriteString(c.out, "\n")
		c.lineStart = true
	}
}

var markdownMarks = strings.NewReplacer("**", "", "`", "")

// plain drops the bold and code marks core puts in tool lines.
func plain(markdown string) string { return markdownMarks.Replace(markdown) }

// firstLine returns s's first non-empty line, cut to max runes.
func firstLine(s string, max int) string {
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if r := []rune(l); len(r) > max {
				return string(r[:max-1]) + "…"
			}
			return l
		}
	}
	return "the tool failed"
}
