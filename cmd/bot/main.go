// Command bot is golem's command line. This minimal main only dispatches
// the events subcommand; the lead replaces it with the full command.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if len(os.Args) < 2 || os.Args[1] != "events" {
		fmt.Fprintln(os.Stderr, "usage: bot events [--engine claude-code|cursor] [FILE]")
		os.Exit(2)
	}
	if err := runEvents(ctx, os.Args[2:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "bot:", err)
		os.Exit(1)
	}
}
