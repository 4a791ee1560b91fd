package engine

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Session is one agent session that a CLI keeps on disk: what `/sessions`
// shows of it and what `/resume` needs.
type Session struct {
	ID      string
	Workdir string    // the working directory it ran in
	Written time.Time // when the CLI last wrote it
	// Prompts is how many prompts the person typed (tool results and the
	// CLI's own messages do not count); -1 when it was not counted.
	Prompts int
	// FirstPrompt is the first of them, whole; empty when not read.
	FirstPrompt string
}

// SessionLister is implemented by engines whose CLI keeps its sessions
// where golem can read them (Claude Code's projects folder, Codex's
// rollout files). Reading never changes a session's files and never
// follows a symlink out of the CLI's folder; a malformed line is skipped.
// Implementations are safe for concurrent use.
type SessionLister interface {
	// Sessions returns the sessions of workdir, newest first. The first
	// detail of them carry Prompts and FirstPrompt; the rest only their
	// id and when they were written, which costs a stat each.
	Sessions(workdir string, detail int) ([]Session, error)
	// SessionsElsewhere returns the sessions whose id starts with prefix
	// that ran in another working directory than workdir, so that a
	// `/resume` of one can say where it belongs.
	SessionsElsewhere(workdir, prefix string) ([]Session, error)
	// ResumeCommand is the shell command that continues session id of
	// workdir in a terminal on this machine.
	ResumeCommand(workdir, id string) string
}

// ErrNoSessions is wrapped by an engine's Sessions when its CLI keeps no
// session files golem can read.
var ErrNoSessions = errors.New("this engine's sessions cannot be listed")

// summary is what reading a session file taught: its prompts so far, and
// how far it was read (the offset after the last whole line), so that a
// file that grew is read on from there. Session files are only appended to.
type summary struct {
	size    int64
	modTime time.Time
	offset  int64
	prompts int
	first   string
	cwd     string
}

// summaries caches a summary per file path, so that `/sessions` reads a
// session file once and later only what was appended to it. It is bounded:
// when full it starts afresh.
var summaries = struct {
	mu sync.Mutex
	m  map[string]summary
}{m: map[string]summary{}}

const maxSummaries = 8192

// maxLine is the longest line a summary looks into; longer ones (a tool
// result holding a big file) are skipped unread, as no typed prompt is
// that long.
const maxLine = 4 << 20

// lineInfo is what a CLI's format says of one line of its session file: a
// prompt the person typed (prompt true, text), and the working directory
// it records (cwd), each when the line has them.
type lineInfo func(line []byte) (text string, prompt bool, cwd string)

// summarize returns the summary of the session file at path (a regular
// file, already resolved inside the CLI's folder), read with info: from
// the cache when the file's size and mtime are those cached, reading on
// from the cached offset when it grew, else from the start.
func summarize(path string, st os.FileInfo, info lineInfo) (summary, error) {
	summaries.mu.Lock()
	s, ok := summaries.m[path]
	summaries.mu.Unlock()
	if ok && s.size == st.Size() && s.modTime.Equal(st.ModTime()) {
		return s, nil
	}
	if !ok || st.Size() < s.offset {
		s = summary{}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return summary{}, err
	}
	defer f.Close()
	if _, err := f.Seek(s.offset, io.SeekStart); err != nil {
		return summary{}, err
	}
	r := bufio.NewReaderSize(f, 256<<10)
	var long []byte // a line longer than the reader's buffer, gathered
	skipping := false
	for {
		chunk, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if !skipping {
				long = append(long, chunk...)
				if len(long) > maxLine {
					long, skipping = nil, true
				}
			}
			s.offset += int64(len(chunk))
			continue
		}
		if err != nil { // io.EOF: a last line without newline is still being written
			break
		}
		s.offset += int64(len(chunk))
		line := chunk
		if long != nil {
			line = append(long, chunk...)
			long = nil
		}
		if skipping {
			skipping = false
			continue
		}
		text, prompt, cwd := info(bytes.TrimSpace(line))
		if cwd != "" && s.cwd == "" {
			s.cwd = cwd
		}
		if prompt {
			if s.prompts == 0 {
				s.first = text
			}
			s.prompts++
		}
	}
	s.size, s.modTime = st.Size(), st.ModTime()
	summaries.mu.Lock()
	if len(summaries.m) >= maxSummaries {
		summaries.m = map[string]summary{}
	}
	summaries.m[path] = s
	summaries.mu.Unlock()
	return s, nil
}

// within resolves path's symlinks and reports the result when it stays
// inside root (itself resolved); "" when it leaves root or cannot be
// resolved.
func within(root, path string) string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	return real
}

// sessionFile is a session file found in a listing, before its summary.
type sessionFile struct {
	id   string
	path string // resolved, inside the CLI's folder
	st   os.FileInfo
}

// newestFirst sorts files by mtime, newest first, then by id.
func newestFirst(a, b sessionFile) int {
	if c := b.st.ModTime().Compare(a.st.ModTime()); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
