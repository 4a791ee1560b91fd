package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/parser"
)

// runEvents implements `bot events --engine NAME [FILE]` (NAME one of the
// engine registry's): it
// reads an agent CLI's raw stdout from FILE (or stdin when FILE is absent or
// "-") and prints the normalized events, one JSON object per line. The last
// line is always exactly one terminal event: input that ends without a
// result yields an error event. It returns an error for bad usage, an
// unreadable input or a failed write; a read that fails midway still ends
// the output with a terminal error event.
func runEvents(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("events", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("engine", engine.Default().Name, "the `engine` whose CLI printed the input: "+engine.NamesText())
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: bot events [--engine %s] [FILE]\n", strings.Join(engine.Names(), "|"))
		fmt.Fprintln(fs.Output(), "Prints the normalized events of an agent CLI's stream-json output (FILE or stdin), one JSON object per line.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return fmt.Errorf("events: at most one FILE, got %d arguments", fs.NArg())
	}
	p, err := engine.NewParser(*name)
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	in := stdin
	if name := fs.Arg(0); name != "" && name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("events: open input: %w", err)
		}
		defer f.Close()
		in = f
	}

	out := bufio.NewWriterSize(stdout, 64<<10)
	var writeErr error
	emit := func(e parser.Event) {
		if writeErr != nil {
			return
		}
		b, _ := e.MarshalJSON() // never fails
		b = append(b, '\n')
		if _, err := out.Write(b); err != nil {
			writeErr = fmt.Errorf("events: write: %w", err)
		}
	}
	g := parser.NewGuard(p)
	readErr := parser.ReadLines(ctxReader{ctx, in}, func(line []byte) {
		for _, e := range g.Parse(line) {
			emit(e)
		}
	})
	reason := "the output ended before a result line"
	if readErr != nil {
		reason = readErr.Error()
		readErr = fmt.Errorf("events: %w", readErr)
	}
	// A recorded output that was read to its end counts as from a CLI
	// that exited cleanly (OpenCode's runs end without a result line).
	if e, ok := g.End(readErr == nil, reason); ok {
		emit(e)
	}
	if err := out.Flush(); err != nil && writeErr == nil {
		writeErr = fmt.Errorf("events: write: %w", err)
	}
	return errors.Join(readErr, writeErr)
}

// ctxReader stops reading once ctx is done, so a cancelled `bot events`
// ends at its next read instead of draining the whole input.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}
