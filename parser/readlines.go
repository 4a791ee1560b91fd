package parser

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// readBufferSize is the size of ReadLines' read buffer. Lines that fit in it
// are handed to fn without being copied; longer lines are assembled in a
// growing side buffer.
const readBufferSize = 64 << 10

// ReadLines splits the byte stream r on '\n' and calls fn once per line,
// without the newline and without a trailing '\r'. Lines may be of any
// length. A last line that is not terminated by '\n' is delivered at EOF;
// a stream that ends with '\n' yields no extra empty line. Empty lines in
// the middle of the stream are delivered as empty slices.
//
// The slice passed to fn is only valid during the call: it aliases
// ReadLines' buffers, so fn must copy what it keeps. ReadLines returns nil
// at EOF, or the first read error, wrapped.
func ReadLines(r io.Reader, fn func(line []byte)) error {
	return ReadLineBatches(r, fn, nil)
}

// ReadLineBatches is ReadLines that also calls flush, when not nil, each
// time every line read so far has been handed to fn and the next one
// needs another read: at the end of each batch of lines the writer wrote
// at once (one read takes everything in the pipe, up to 64 KiB). A reader
// that hands lines on can wake its consumer once per flush instead of once
// per line.
func ReadLineBatches(r io.Reader, fn func(line []byte), flush func()) error {
	br := bufio.NewReaderSize(r, readBufferSize)
	var long []byte // assembles lines longer than the read buffer; reused
	for {
		frag, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], frag...)
			for errors.Is(err, bufio.ErrBufferFull) {
				frag, err = br.ReadSlice('\n')
				long = append(long, frag...)
			}
			frag = long
		}
		if len(frag) > 0 {
			deliver(frag, err == nil, fn)
		}
		if flush != nil && (err != nil || !lineBuffered(br)) {
			flush()
		}
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("parser: read lines: %w", err)
		}
		if cap(long) > 4*readBufferSize && len(frag) <= readBufferSize {
			long = nil // let one huge line's buffer go after it has passed
		}
	}
}

// lineBuffered reports whether br holds a whole line that needs no read.
func lineBuffered(br *bufio.Reader) bool {
	rest, _ := br.Peek(br.Buffered())
	return bytes.IndexByte(rest, '\n') >= 0
}

// deliver strips the line terminator ('\n' when terminated, then one '\r')
// and calls fn.
func deliver(line []byte, terminated bool, fn func([]byte)) {
	if terminated {
		line = line[:len(line)-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	fn(line)
}
