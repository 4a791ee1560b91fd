package main

import (
	"context"
	"errors"
	"flag"
	"io"

	"github.com/golem-chat/golem/adapters/console"
	"github.com/golem-chat/golem/store"
)

// runChat is `bot run`: a terminal chat with the same commands as the
// platforms. Logs go to stderr at warn level unless the config says debug.
func runChat(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	load := configFlag(fs)
	conversation := fs.String("conversation", console.DefaultConversation, "the conversation `name`; its session carries over between runs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := load()
	if err != nil {
		return err
	}
	level := "warn"
	if cfg.LogLevel == "debug" {
		level = "debug"
	}
	// The terminal fires its own conversation's schedules, and only
	// while it is open: `bot serve` leaves them alone, so a run that comes
	// while no terminal is open is a missed run, fired at the next `bot
	// run` if it is at most schedules.catch_up old (else skipped, and said
	// so with the next run).
	conv := *conversation
	a, err := newApp(cfg, newLogger(stderr, level), func(sc store.Schedule) bool {
		return sc.Platform == "console" && sc.Channel == conv
	})
	if err != nil {
		return err
	}
	c := console.New(stdin, stdout, console.Options{Conversation: conv})
	a.d.Register(c)
	loopCtx, stopLoop := context.WithCancel(ctx)
	loop := make(chan struct{})
	go func() {
		defer close(loop)
		a.schedules.Run(loopCtx)
	}()
	err = c.Start(ctx, a.d)
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	stopLoop()
	<-loop // its runs have given up waiting; their turns end with the dispatcher
	return errors.Join(err, a.close())
}
