package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// output is the read end of a CLI's stdout pipe, read by follow at the
// pace of the run's hand-overs (see coalesce) so that a CLI printing a
// line every half millisecond does not wake golem once per line:
//
//   - After a quiet spell it reads as lines come: the first of a burst is
//     handed over at once, and so is a terminal line that follows it.
//     Events held meanwhile are handed over when the read's deadline, the
//     end of the coalescing window, passes.
//   - When a window ended with events held, the output streams steadily:
//     the reader then sleeps through steady windows (steadyWindows
//     coalescing windows, 20 ms) and takes what arrived meanwhile in one
//     read at each one's end, handed over at once. A read that brings
//     fewer lines than steadyWindows ends the steady spell: the lines
//     after it are read as they come again. A read that fills the buffer
//     does not wait: the pipe is full and the CLI blocked on it.
//
// So while the output streams at a line per coalescing window or faster,
// a line, the terminal one included, waits in the pipe for at most one
// steady window. A pipe the runtime's poller watches wakes a thread at
// every write into it, read or not, so while steady the pipe is outside
// the poller: the reader keeps a descriptor of its own, and a duplicate
// in the poller (f) only while it waits for data.
//
// One goroutine reads; Close may be called from any.
type output struct {
	fd     int  // the pipe's read end, non-blocking, outside the poller
	r      *Run // nil: read as lines come, no pacing
	steady bool // a steady spell: sleep through the next steady window
	full   bool // the last read filled the buffer: more is waiting
	reads  int  // reads and waits so far (tests count them)

	mu       sync.Mutex
	f        *os.File  // a duplicate of fd in the poller, or nil
	deadline time.Time // the read deadline set on f
	closed   bool
}

// newOutput makes the pipe of a CLI's stdout: w for the child, the output
// to read it from for r (nil: no pacing).
func newOutput(r *Run) (*output, *os.File, error) {
	var p [2]int
	syscall.ForkLock.RLock() // no child may inherit the pipe before it is close-on-exec
	err := syscall.Pipe(p[:])
	if err == nil {
		syscall.CloseOnExec(p[0])
		syscall.CloseOnExec(p[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, err
	}
	if err := syscall.SetNonblock(p[0], true); err != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, nil, err
	}
	return &output{fd: p[0], r: r}, os.NewFile(uintptr(p[1]), "|1"), nil
}

// Read implements io.Reader for parser.ReadLineBatches, whose flush is
// Run.offer: Read is called once every line read so far has been handed
// to the parser, or in the middle of a line.
func (o *output) Read(b []byte) (int, error) {
	for {
		if o.steady && !o.full {
			if err := o.watch(false); err != nil {
				return 0, err
			}
			o.r.sleepSteady()
			o.reads++
			n, err := o.readNow(b)
			o.full = n == len(b)
			// Too few lines for the window: read them as they come.
			o.steady = bytes.Count(b[:n], newline) >= steadyWindows
			if n > 0 || err != nil {
				return n, err // came during the window: offer hands it over now
			}
		}
		n, err := o.readWatched(b)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			o.r.handOver() // the window is over
			o.steady, o.full = true, false
			continue
		}
		o.full = n == len(b)
		return n, err
	}
}

// readWatched reads through the poller: it waits until the pipe is
// readable or, while events are held, until their window is over
// (os.ErrDeadlineExceeded).
func (o *output) readWatched(b []byte) (int, error) {
	o.reads++
	if err := o.watch(true); err != nil {
		return 0, err
	}
	var until time.Time
	if o.r != nil {
		if t, held := o.r.heldUntil(); held {
			until = t
		}
	}
	o.mu.Lock()
	f := o.f
	if !until.Equal(o.deadline) {
		if err := f.SetReadDeadline(until); err != nil {
			o.mu.Unlock()
			return 0, fmt.Errorf("read agent output: %w", err)
		}
		o.deadline = until
	}
	o.mu.Unlock()
	return f.Read(b)
}

// watch puts the pipe in the poller (on) or takes it out.
func (o *output) watch(on bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.closed:
		return os.ErrClosed
	case on && o.f == nil:
		fd, err := dupCloexec(o.fd)
		if err != nil {
			return fmt.Errorf("read agent output: %w", err)
		}
		o.f, o.deadline = os.NewFile(uintptr(fd), "|0"), time.Time{} // non-blocking: in the poller
	case !on && o.f != nil:
		o.f.Close()
		o.f = nil
	}
	return nil
}

// readNow reads what is in the pipe without waiting: 0 bytes and no error
// when there is nothing, io.EOF at its end.
func (o *output) readNow(b []byte) (int, error) {
	o.mu.Lock()
	closed := o.closed
	o.mu.Unlock()
	if closed {
		return 0, os.ErrClosed
	}
	for {
		n, err := syscall.Read(o.fd, b)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, nil
		case err != nil:
			return 0, fmt.Errorf("read agent output: %w", err)
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Close makes a Read in progress, and every later one, fail; the pipe is
// closed once the reader is done (release).
func (o *output) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	if o.f != nil {
		o.f.Close() // a wait in progress returns
		o.f = nil
	}
	return nil
}

// release closes the pipe; the reader calls it when it is done.
func (o *output) release() {
	o.Close()
	syscall.Close(o.fd)
}

var newline = []byte{'\n'}

// dupCloexec duplicates fd, close-on-exec.
func dupCloexec(fd int) (int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	nfd, err := syscall.Dup(fd)
	if err != nil {
		return -1, err
	}
	syscall.CloseOnExec(nfd)
	return nfd, nil
}
