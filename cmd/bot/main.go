// Command bot is golem's command line:
//
//	bot serve  [--config bot.yaml]   run every configured platform and the HTTP API
//	bot run    [--config bot.yaml]   chat with the agent in this terminal
//	bot doctor [--config bot.yaml]   check that what the config names can work
//	bot events --engine NAME [FILE]  print a CLI's raw stdout as normalized events
//	bot version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `golem brings a coding agent into team chat.

Usage:
  bot serve  [--config bot.yaml]          run every configured platform and the HTTP API
  bot run    [--config bot.yaml]          chat with the agent in this terminal
  bot doctor [--config bot.yaml]          check the config, store, workspace, engines' CLIs and platforms' tokens
  bot events --engine NAME [FILE]         print a CLI's raw stdout (FILE or stdin) as normalized events
  bot version                             print the version

Run "bot COMMAND -h" for a command's flags.
`

// hurry is cancelled by a second SIGINT/SIGTERM: shutdown then stops the
// running answers at once (killing their agents) instead of waiting for
// them. A third signal kills golem outright.
var hurry, hurryUp = context.WithCancel(context.Background())

func main() { os.Exit(botMain()) }

// botMain runs the command of os.Args with the signal handling above and
// returns its exit code.
func botMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		second := make(chan os.Signal, 1)
		signal.Notify(second, os.Interrupt, syscall.SIGTERM) // before stop: no gap
		stop()
		<-second
		signal.Stop(second)
		fmt.Fprintln(os.Stderr, "bot: stopping running answers now; a third signal kills")
		hurryUp()
	}()
	return run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = runServe(ctx, args[1:], stderr)
	case "run":
		err = runChat(ctx, args[1:], stdin, stdout, stderr)
	case "doctor":
		err = runDoctor(ctx, args[1:], stdout, stderr, defaultDoctorLimits)
	case "events":
		err = runEvents(ctx, args[1:], stdin, stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "golem", version)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "bot: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	default:
		fmt.Fprintln(stderr, "bot:", err)
		return 1
	}
}
