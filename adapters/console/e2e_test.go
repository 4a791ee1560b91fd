package console

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/bottest"
	"github.com/golem-chat/golem/schedule"
	"github.com/golem-chat/golem/store"
	"github.com/jonboulle/clockwork"
)

// TestEndToEnd runs `bot run`'s wiring: the console, a real dispatcher and
// the fake agent CLI as Claude Code.
func TestEndToEnd(t *testing.T) {
	b := bottest.New(t, bottest.Options{Trusted: []string{"console"}})
	d := b.Dispatcher

	in := "hello console\n!tool Bash {\"command\":\"go test ./...\"}\\\nran the tests\n/status\n/quit\n"
	var out bytes.Buffer
	c := New(strings.NewReader(in), &out, Options{})
	d.Register(c)
	if err := c.Start(context.Background(), d); err != nil {
		t.Fatalf("Start: %v", err)
	}
	got := out.String()
	for _, want := range []string{
		"> echo: hello console\n\n> ",
		"> . 🔧 Bash — go test ./...\necho: ran the tests\n\n> ",
		"claude-code",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("transcript lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "> "); n != 4 {
		t.Errorf("%d prompts, want 4:\n%s", n, got)
	}
}

// TestApprovalPrompt: `bot run` asks allow? [y]es · [s]ession · [n]o for a
// permission request and answers with what is typed at it.
func TestApprovalPrompt(t *testing.T) {
	b := bottest.New(t, bottest.Options{Trusted: []string{"console"}})
	d := b.Dispatcher
	in, typed := io.Pipe()
	out := &syncBuffer{}
	c := New(in, out, Options{})
	d.Register(c)
	done := make(chan error, 1)
	go func() { done <- c.Start(context.Background(), d) }()
	io.WriteString(typed, "!ask Write {\"file_path\":\"a.txt\",\"content\":\"x\"}\\\nwritten\n")
	out.waitFor(t, "allow? [y]es · [s]ession · [n]o ")
	io.WriteString(typed, "maybe\ny\n")
	out.waitFor(t, "echo: written")
	io.WriteString(typed, "/quit\n")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"🔐 the agent asks: ", "Write", "✅ Write allowed by"} {
		if !strings.Contains(got, want) {
			t.Errorf("transcript lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "allow? [y]es"); n != 2 {
		t.Errorf("asked %d times, want twice (\"maybe\" is no answer):\n%s", n, got)
	}
}

// TestScheduledRunWhileTyping sets a schedule from the terminal and lets
// its instant come (an injected clock) while a line is half typed: the
// run's answer prints whole, its ⏰ line first, on lines of its own below
// the prompt, the prompt comes again, and the line finished after it is
// sent as one message.
func TestScheduledRunWhileTyping(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 12, 7, 8, 59, 0, 0, time.UTC))
	var book *schedule.Book
	b := bottest.New(t, bottest.Options{Trusted: []string{"console"}, Tune: func(o *core.Options) {
		book = schedule.New(schedule.Options{Store: o.Store, Clock: clock, Logger: o.Logger,
			Fires: func(sc store.Schedule) bool { return sc.Platform == "console" }})
		o.Schedules = book
	}})
	d := b.Dispatcher
	book.Bind(d)
	in, typed := io.Pipe()
	out := &syncBuffer{}
	c := New(in, out, Options{})
	d.Register(c)
	done := make(chan error, 1)
	go func() { done <- c.Start(context.Background(), d) }()
	ctx, cancel := context.WithCancel(context.Background())
	loop := make(chan struct{})
	go func() { book.Run(ctx); close(loop) }()
	defer func() { cancel(); <-loop }()

	io.WriteString(typed, "/every \"@every 1m\" ping\n")
	out.waitFor(t, "Next runs: ")
	id := regexp.MustCompile("Scheduled `([0-9a-f]+)`").FindStringSubmatch(out.String())
	if id == nil {
		t.Fatalf("no id in the answer:\n%s", out)
	}
	out.waitFor(t, "unschedule "+id[1]+"`\n\n> ")
	io.WriteString(typed, "hel") // read by the console's reader: half a line, Enter not pressed
	wctx, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	if err := clock.BlockUntilContext(wctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute) // 09:00
	block := "> \n⏰ " + id[1] + " · 09:00\n\necho: ping\n> "
	out.waitFor(t, block)
	io.WriteString(typed, "lo\n")
	out.waitFor(t, "echo: hello\n")
	io.WriteString(typed, "/quit\n")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := out.String(); strings.Count(got, "⏰ "+id[1]+" · ") != 1 || strings.Contains(got, "echo: lo") {
		t.Errorf("transcript:\n%s", got)
	}
}
