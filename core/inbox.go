package core

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/golem-chat/golem/store"
)

// ErrTooLarge is returned by Inbox.Save for a file over the size limit.
var ErrTooLarge = errors.New("attachment too large")

// Inbox is the folder in the agent's workspace where attachments land.
// Adapters download a user's files through it, so every platform gets the
// same safe names and the same size limit.
type Inbox struct {
	Dir      string // absolute; created on first save
	MaxBytes int64  // per file; 0 means 20 MiB
}

// Save copies r into the inbox under a safe, unique name derived from name
// and returns the saved attachment. It never writes outside Dir (path
// separators, "..", control characters and odd Unicode are neutralized) and
// stops at MaxBytes, removing the partial file and returning ErrTooLarge.
func (in Inbox) Save(name string, r io.Reader) (Attachment, error) {
	limit := in.MaxBytes
	if limit <= 0 {
		limit = 20 << 20
	}
	dir, err := openInbox(filepath.Dir(in.Dir), filepath.Base(in.Dir))
	if err != nil {
		return Attachment{}, fmt.Errorf("inbox: %w", err)
	}
	defer dir.Close()
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	base := hex.EncodeToString(rnd[:]) + "-" + SafeFileName(name)
	f, err := dir.OpenFile(base, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return Attachment{}, fmt.Errorf("inbox: %w", err)
	}
	n, err := io.Copy(f, io.LimitReader(r, limit+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > limit {
		err = fmt.Errorf("%w: %q is over %d bytes", ErrTooLarge, name, limit)
	}
	if err != nil {
		dir.Remove(base)
		return Attachment{}, fmt.Errorf("inbox: save %q: %w", name, err)
	}
	return Attachment{Name: name, Path: filepath.Join(in.Dir, base), Size: n}, nil
}

// openInbox returns the folder name in parent (made where missing) as an
// os.Root. The agent writes parent (its working directory, or with
// isolation: shared the workspace): it may have made name a symlink to a
// folder outside, such as /etc/cron.d or another conversation's worktree,
// and golem, which writes where the agent cannot, must not follow it
// there. Through the root it cannot, even should the agent swap the folder
// meanwhile (a message steering a running turn): such a name is an error
// (found by review).
func openInbox(parent, name string) (*os.Root, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	p, err := os.OpenRoot(parent)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if err := p.Mkdir(name, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	return p.OpenRoot(name)
}

// SafeFileName reduces a user-supplied file name to one safe to create in a
// folder: the base name only, letters, digits, '.', '-' and '_' kept, every
// other rune replaced by '_', no leading dots, at most 100 bytes.
func SafeFileName(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case r == utf8.RuneError, unicode.IsControl(r):
			b.WriteByte('_')
		case r < utf8.RuneSelf && (r == '.' || r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)):
			b.WriteRune(r)
		case r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 100 {
			break
		}
	}
	s := strings.TrimLeft(b.String(), ".")
	if s == "" {
		s = "file"
	}
	return s
}

// StateStore keeps small adapter state across restarts, such as Telegram's
// update offset. The store implements it; keys are namespaced by adapters
// ("telegram.offset").
type StateStore interface {
	Load(key string) ([]byte, error) // nil, nil when absent
	Save(key string, value []byte) error
}

var _ StateStore = store.State(nil)

// NotSaved is the note an adapter adds to a message's text for an
// attachment it could not save (err from its download or Inbox.Save), so
// that the agent and the user learn of it instead of losing it silently.
func NotSaved(name string, err error) string {
	reason := "it could not be downloaded"
	if errors.Is(err, ErrTooLarge) {
		reason = "it is too large"
	}
	return fmt.Sprintf("(The attachment %q was not saved: %s.)", name, reason)
}

// InboxDir is the folder of a working directory where attachments land.
const InboxDir = "inbox"

// moveInto returns the attachments with every file that is not already
// inside workdir moved into workdir's inbox/, so that the agent finds them
// in its own working directory: adapters save into the workspace's inbox,
// while a conversation may work in a git worktree of its own (which keeps
// inbox/ out of git) or in its channel's workdir. A file that cannot be
// moved stays where it is, and its old path is kept.
func moveInto(workdir string, atts []Attachment, log *slog.Logger) []Attachment {
	inbox := filepath.Join(workdir, InboxDir)
	out := make([]Attachment, len(atts))
	for i, a := range atts {
		out[i] = a
		if rel, err := filepath.Rel(workdir, a.Path); err == nil && filepath.IsLocal(rel) {
			continue
		}
		name := filepath.Base(a.Path) // already unique (Inbox.Save)
		if err := moveFile(a.Path, workdir, name); err != nil {
			log.Warn("move attachment into the working directory", "err", err)
			continue
		}
		out[i].Path = filepath.Join(inbox, name)
	}
	return out
}

// moveFile moves from into workdir's inbox/ as name, never replacing an
// existing file nor writing outside workdir (see openInbox). It copies:
// a rename would resolve inbox/ as a path, which the agent may have
// turned into a symlink; an attachment is small (Inbox.MaxBytes).
func moveFile(from, workdir, name string) error {
	dir, err := openInbox(workdir, InboxDir)
	if err != nil {
		return err
	}
	defer dir.Close()
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		dir.Remove(name)
		return err
	}
	if err := dst.Close(); err != nil {
		dir.Remove(name)
		return err
	}
	return os.Remove(from)
}
