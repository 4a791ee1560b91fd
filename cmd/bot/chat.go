package main

import (
	"context"
	"errors"
	"flag"
	"io"

	"github.com/golem-chat/golem/adapters/console"
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
	a, err := newApp(cfg, newLogger(stderr, level))
	if err != nil {
		return err
	}
	c := console.New(stdin, stdout, console.Options{Conversation: *conversation})
	a.d.Register(c)
	err = c.Start(ctx, a.d)
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return errors.Join(err, a.close())
}
