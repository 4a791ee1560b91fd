package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/store"
)

// OutboxDir is the folder of the agent's working directory whose files are
// sent to the chat when a turn ends (the shipped skill "files" tells the
// agent).
const OutboxDir = "outbox"

// maxOutboxFiles bounds the files one turn sends; the rest get a note.
const maxOutboxFiles = 10

// outboxStamp is what tells a file the turn left from one that was there.
type outboxStamp struct {
	size int64
	mod  time.Time
	id   fileID
}

// fileID tells one file from another: its device and inode.
type fileID struct{ dev, ino uint64 }

func idOf(fi os.FileInfo) fileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileID{dev: uint64(st.Dev), ino: st.Ino}
	}
	return fileID{}
}

// outbox is the outbox/ of one turn's working directory.
type outbox struct {
	dir    string
	before map[string]outboxStamp
}

// openOutbox notes what outbox/ of workdir holds as a turn starts.
func openOutbox(workdir string) *outbox {
	o := &outbox{dir: filepath.Join(workdir, OutboxDir)}
	o.before = o.scan()
	return o
}

// scan lists outbox/'s regular files (no symlinks, no folders, no dot
// files) by name. An outbox/ that is not a folder of its own — a symlink
// the agent made to golem's data folder, say — holds nothing: golem never
// sends what it points at (found by review).
func (o *outbox) scan() map[string]outboxStamp {
	if fi, err := os.Lstat(o.dir); err != nil || !fi.IsDir() {
		return nil
	}
	entries, err := os.ReadDir(o.dir)
	if err != nil {
		return nil
	}
	out := make(map[string]outboxStamp, len(entries))
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		out[e.Name()] = outboxStamp{size: fi.Size(), mod: fi.ModTime(), id: idOf(fi)}
	}
	return out
}

// left returns the files the turn left in outbox/ (new, or changed since
// it started), by name, at most maxOutboxFiles, and how many more there
// were.
func (o *outbox) left() (files []File, more int) {
	for name, st := range o.scan() {
		if was, ok := o.before[name]; ok && was == st {
			continue
		}
		files = append(files, File{Name: SafeFileName(name), Path: filepath.Join(o.dir, name), Size: st.size,
			root: filepath.Dir(o.dir), rel: filepath.Join(OutboxDir, name), id: st.id})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	if len(files) > maxOutboxFiles {
		more = len(files) - maxOutboxFiles
		files = files[:maxOutboxFiles]
	}
	return files, more
}

// ErrNotAFile is returned by File.Open for a file the agent left that is
// no longer a regular file of its working directory.
var ErrNotAFile = errors.New("not a regular file in the agent's working directory")

// Open opens f's bytes for reading, at most f.Size of them. A file the
// agent left is opened through its working directory as an os.Root, and
// must be the very file core listed (its inode): the agent (or another
// conversation's, in a shared folder) may have put a symlink in its
// place, or turned outbox/ into one, since core listed it, and golem,
// which reads what the agent cannot (its store, its config, the other
// conversations' attachments), must follow neither; nor may it block on a
// FIFO put there. Those are ErrNotAFile.
func (f File) Open() (io.ReadCloser, error) {
	if f.root == "" { // golem's own file (a /diff)
		return os.Open(f.Path)
	}
	root, err := os.OpenRoot(f.root)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", f.Name, err)
	}
	defer root.Close()
	fh, err := root.OpenFile(f.rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w: %w", f.Name, ErrNotAFile, err)
	}
	if fi, err := fh.Stat(); err != nil || !fi.Mode().IsRegular() || idOf(fi) != f.id {
		fh.Close()
		return nil, fmt.Errorf("open %s: %w", f.Name, ErrNotAFile)
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(fh, f.Size), fh}, nil
}

// handback is what a turn hands back besides its answer: the files the
// agent left in dir (its outbox/), and how many more there were than one
// answer sends.
type handback struct {
	dir   string
	files []File
	more  int
	// withheld counts the files not sent because a turn of another
	// conversation worked in the same folder meanwhile (see useOutbox).
	withheld int
}

// outboxUse is one running turn's use of an outbox folder.
type outboxUse struct {
	key    store.Key // the turn's conversation
	shared bool      // a turn of another conversation used the folder meanwhile
}

// useOutbox records that a turn of the conversation key works with the
// outbox folder dir, and returns the func that ends that when the turn has
// listed the files it left, reporting whether a turn of another
// conversation used dir at any time meanwhile. Conversations share a
// folder with isolation: shared; a file then appearing in outbox/ may be
// either agent's, so neither turn sends it anywhere (it stays in the
// folder, and both answers say so without naming it): a conversation's
// files never reach another conversation's chat.
func (d *Dispatcher) useOutbox(dir string, key store.Key) (shared func() bool) {
	u := &outboxUse{key: key}
	d.mu.Lock()
	users := d.outboxes[dir]
	if users == nil {
		users = map[*outboxUse]bool{}
		d.outboxes[dir] = users
	}
	for o := range users {
		if o.key != key {
			o.shared, u.shared = true, true
		}
	}
	users[u] = true
	d.mu.Unlock()
	return func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		delete(users, u)
		if len(users) == 0 {
			delete(d.outboxes, dir)
		}
		return u.shared
	}
}

// withheldNote tells an answer that its files, if any, were held back.
func (h handback) withheldNote() string {
	return fmt.Sprintf("%d new files in %s were not sent: another conversation's agent worked in the same folder at the same time, so they may be its. They are still there; with `isolation: worktree` each conversation works in a folder of its own.", h.withheld, h.dir)
}

// sinkEvents are the files as a message's Sink gets them: file events,
// and a warning when more files were left than one answer sends.
func (h handback) sinkEvents() []parser.Event {
	var out []parser.Event
	for _, f := range h.files {
		out = append(out, parser.Event{Type: parser.File, Name: f.Name, File: &parser.FileInfo{Size: f.Size, Path: f.Path, Open: f.Open}})
	}
	if h.more > 0 {
		out = append(out, parser.Event{Type: parser.Warning, Message: h.moreNote()})
	}
	if h.withheld > 0 {
		out = append(out, parser.Event{Type: parser.Warning, Message: h.withheldNote()})
	}
	return out
}

func (h handback) moreNote() string {
	return fmt.Sprintf("%d more files in %s were not sent: one answer sends at most %d.", h.more, h.dir, maxOutboxFiles)
}

// toPoster posts the files under answer (at place when the answer was
// never posted): uploaded where p is an Uploader and the file is within
// its MaxUpload, otherwise named in a note with where it is, so that no
// file is ever dropped silently.
func (h handback) toPoster(ctx context.Context, p Poster, place Place, answer MessageRef, log *slog.Logger) {
	if len(h.files) == 0 && h.withheld == 0 {
		return
	}
	up, uploads := p.(Uploader)
	limit := p.Limits().MaxUpload
	var notes []string
	var unsent []string
	for _, f := range h.files {
		switch {
		case !uploads || answer.ID == "":
			unsent = append(unsent, fmt.Sprintf("`%s` (%s)", f.Name, size(f.Size)))
		case limit > 0 && f.Size > limit:
			notes = append(notes, fmt.Sprintf("📎 `%s` (%s) is over the %s this chat takes for a file; it is at `%s` on the bot's machine.",
				f.Name, size(f.Size), size(limit), f.Path))
		default:
			if err := up.Upload(ctx, answer, f); err != nil {
				log.Warn("upload file", "size", f.Size, "err", err)
				notes = append(notes, fmt.Sprintf("📎 `%s` could not be sent (%v); it is at `%s` on the bot's machine.", f.Name, err, f.Path))
			}
		}
	}
	if len(unsent) > 0 {
		notes = append(notes, fmt.Sprintf("📎 The agent left %s in `%s`, on the bot's machine; this chat cannot receive files from golem.",
			strings.Join(unsent, ", "), h.dir))
	}
	if h.more > 0 {
		notes = append(notes, "📎 "+h.moreNote())
	}
	if h.withheld > 0 {
		notes = append(notes, "📎 "+h.withheldNote())
	}
	if len(notes) == 0 {
		return
	}
	text := strings.Join(notes, "\n")
	var err error
	if answer.ID != "" {
		err = p.SendActivity(ctx, answer, text)
	} else {
		_, err = p.Send(ctx, place, text)
	}
	if err != nil {
		log.Warn("post file note", "err", err)
	}
}

// size formats n bytes for a note.
func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
