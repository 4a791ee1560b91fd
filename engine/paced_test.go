package engine

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/golem-chat/golem/parser"
)

// pipeRun reads an output pipe as follow does, each line a text event and
// "END" the terminal one, for a run holding events for hold. It returns
// the run, the output, the pipe's write end and the reader's error once
// it is done.
func pipeRun(t *testing.T, hold time.Duration) (*Run, *output, *os.File, chan error) {
	t.Helper()
	r := newRun(context.Background(), hold)
	o, w, err := newOutput(r)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		err := parser.ReadLineBatches(o, func(line []byte) {
			if string(line) == "END" {
				r.push(parser.Event{Type: parser.Done})
				return
			}
			r.push(parser.Event{Type: parser.Text, Content: string(line)})
		}, r.offer)
		o.release()
		r.handOver()
		done <- err
	}()
	t.Cleanup(func() { w.Close() })
	return r, o, w, done
}

func contents(batch []parser.Event) []string {
	var out []string
	for _, ev := range batch {
		if ev.Type == parser.Text {
			out = append(out, ev.Content)
		} else {
			out = append(out, string(ev.Type))
		}
	}
	return out
}

// TestOutputFirstAndTerminalNotHeld: after a quiet spell the first line
// is handed over at once, and a terminal line that follows is not held
// for the rest of the window (an hour here: a held event would hang the
// test), nor are the lines before it.
func TestOutputFirstAndTerminalNotHeld(t *testing.T) {
	r, _, w, done := pipeRun(t, time.Hour)
	fmt.Fprintln(w, "first")
	if got := contents(r.Next()); fmt.Sprint(got) != "[first]" {
		t.Fatalf("first batch %v, want [first]", got)
	}
	fmt.Fprintln(w, "second") // within the window: held...
	fmt.Fprintln(w, "END")    // ...until the terminal line comes
	var got []string
	for batch := r.Next(); batch != nil; batch = r.Next() {
		got = append(got, contents(batch)...)
	}
	if fmt.Sprint(got) != "[second done]" {
		t.Errorf("then %v, want [second done]", got)
	}
	w.Close()
	if err := <-done; err != nil {
		t.Error(err)
	}
}

// TestOutputSteadyReadsOncePerWindow: a CLI printing a line every half
// millisecond is read about once per window, not once per line, and
// every line arrives, in order.
func TestOutputSteadyReadsOncePerWindow(t *testing.T) {
	const lines = 1000
	r, o, w, done := pipeRun(t, 20*time.Millisecond)
	go func() {
		for i := range lines {
			fmt.Fprintln(w, i)
			time.Sleep(500 * time.Microsecond) // the CLI's pace, not a wait
		}
		fmt.Fprintln(w, "END")
		w.Close()
	}()
	n, batches := 0, 0
	for batch := r.Next(); batch != nil; batch = r.Next() {
		batches++
		for _, ev := range batch {
			if ev.Type == parser.Text && ev.Content != fmt.Sprint(n) {
				t.Fatalf("line %q, want %d", ev.Content, n)
			}
			if ev.Type == parser.Text {
				n++
			}
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n != lines {
		t.Fatalf("%d lines, want %d", n, lines)
	}
	// The first window is read line by line (a terminal line there goes
	// at once); after it one read a window.
	if o.reads > lines/4 || batches > lines/4 {
		t.Errorf("%d lines in %d reads and %d batches; want a read and a batch per window", lines, o.reads, batches)
	}
}

// TestOutputClose: Close ends a read waiting for a CLI that prints
// nothing (a leftover child holds the pipe open).
func TestOutputClose(t *testing.T) {
	r, o, w, done := pipeRun(t, time.Hour)
	fmt.Fprintln(w, "first")
	r.Next()
	o.Close()
	if err := <-done; err == nil {
		t.Error("the read went on after Close")
	}
	if _, err := o.readNow(make([]byte, 1)); err == nil {
		t.Error("a read after Close succeeded")
	}
}
