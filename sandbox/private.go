package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// Private is a folder a CLI keeps its state in that every working
// directory has one of its own, inside the sandbox: Claude Code's
// ~/.claude, where one shared folder would let each conversation's agent
// read the others' transcripts and plant settings, hooks or instructions
// that the next conversation's CLI runs.
//
// Inside, Dir is the working directory's own folder (kept in
// Options.StateDir), writable; in it, what the real Dir holds of Shared
// shows read-only, and of Through writable. Nothing else of the real
// Dir is seen.
type Private struct {
	Dir string // the folder as the CLI names it, absolute
	// Shared are the entries of the real Dir that every conversation's
	// CLI reads and none may change: its settings, hooks, instructions,
	// commands. A missing one is missing inside too, and one the agent
	// makes is its own folder's.
	Shared []string
	// AllShared shares every entry the real Dir holds, for a folder that
	// is all configuration (OpenCode's, whose plugins are code it runs).
	AllShared bool
	// Through are paths below the real Dir shown writable: what is
	// shared on purpose, such as the login (a refreshed token must
	// reach every conversation) and the working directory's own
	// sessions (the terminal reads and continues them). A missing file
	// is left out; a missing folder is made, and a symlink in a folder's
	// place is replaced by one (an agent's, left while the real Dir was
	// shared and writable).
	Through []Through
	// Seed, when set, is called with the working directory's own folder
	// before each run, to start what the CLI expects in it (Claude
	// Code's global file). own is an os.Root: the agent writes that
	// folder, and a symlink it left must not lead golem elsewhere.
	Seed func(own *os.Root) error
	// After, when set, is called with the working directory's own folder
	// once the last sandbox using it has ended, to hand on what the CLI
	// wrote there (Codex's new sessions).
	After func(own *os.Root)
}

// privateUse is a running sandbox's use of a working directory's own
// state folder.
type privateUse struct {
	own   string
	after func(own *os.Root)
}

// Through is a path below a Private folder's real Dir shown writable.
type Through struct {
	Path string // relative to Dir
	Dir  bool   // a folder, made where missing; else a file, left out where missing
}

// stateKey names a working directory's folder in Options.StateDir: its
// path's SHA-256, cut to 128 bits, so that no conversation id or odd
// path reaches a file name.
func stateKey(workdir string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(workdir)))
	return hex.EncodeToString(sum[:16])
}

// private mounts p for a turn whose CLI works in workdir: the working
// directory's own folder over p.Dir, then p's shared and through
// entries from the real p.Dir. in is the state folder (Command.State)
// p.Dir is below, "" for none: the agent writes that folder, so p.Dir's
// place in it is made through an os.Root (see placeIn).
func (t *Turn) private(b *builder, p Private, workdir, in string) (privateUse, error) {
	real := filepath.Clean(p.Dir)
	base := strings.TrimPrefix(filepath.Base(real), ".")
	dirKey := sha256.Sum256([]byte(real))
	own := filepath.Join(t.s.stateDir, stateKey(workdir), hex.EncodeToString(dirKey[:4])+"-"+base)
	// Counted before golem touches it: its After (see leavePrivate) runs
	// only with no sandbox of the folder running or being set up.
	t.s.enterPrivate(own)
	use := privateUse{own: own, after: p.After}
	// The real one too, where missing: the mount needs its place.
	if err := os.MkdirAll(own, 0o700); err != nil {
		return use, fmt.Errorf("sandbox: make the CLI's state folder: %w", err)
	}
	var err error
	if in != "" {
		err = placeIn(in, real, t.s.log)
	} else {
		err = os.MkdirAll(real, 0o700)
	}
	if err != nil {
		return use, fmt.Errorf("sandbox: make the CLI's state folder: %w", err)
	}
	root, err := os.OpenRoot(own)
	if err != nil {
		return use, fmt.Errorf("sandbox: open the CLI's own state folder: %w", err)
	}
	defer root.Close()
	if p.Seed != nil {
		if err := p.Seed(root); err != nil {
			return use, fmt.Errorf("sandbox: start the CLI's own state: %w", err)
		}
	}
	b.bindFrom(own, real)
	shared := p.Shared
	if p.AllShared {
		shared = nil
		entries, _ := os.ReadDir(real)
		for _, e := range entries {
			shared = append(shared, e.Name())
		}
	}
	for _, name := range shared {
		src, ok := t.shareable(b, filepath.Join(real, name), real)
		if !ok {
			clearPlaceholder(root, name)
			continue
		}
		fitMountPoint(root, name, isDir(src))
		b.roBindFrom(src, filepath.Join(real, name))
	}
	for _, th := range p.Through {
		path := filepath.Join(real, th.Path)
		if !within(path, real) || path == real {
			continue
		}
		// A symlink above it, or in a file's place, is not followed:
		// every agent wrote the real Dir while it was shared (OpenCode's
		// state folder, until it was a Private), and one it left could
		// lead to ~/.bashrc. The entry is not shown. Checked first, so
		// that nothing below is done where such a link leads.
		linked := th.Path
		if th.Dir {
			linked = filepath.Dir(th.Path) // its own place is mended below
		}
		if linked != "." && linkIn(real, linked) {
			t.s.log.Warn("sandbox: a symlink in the CLI's state folder, where a file or folder is shown writable, is not followed; the agent runs without it", "path", path)
			clearPlaceholder(root, th.Path)
			continue
		}
		if th.Dir {
			// A symlink in a folder's place goes: golem would make, and
			// show writable, what it leads to ($HOME).
			if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				t.s.log.Warn("sandbox: a symlink in the CLI's state folder, where a folder is shown writable, is replaced by a folder", "path", path)
				os.Remove(path)
			}
		}
		if th.Dir {
			if err := os.MkdirAll(path, 0o700); err != nil {
				return use, fmt.Errorf("sandbox: make the CLI's folder %s: %w", path, err)
			}
		}
		src, ok := t.shareable(b, path, real)
		if !ok || isDir(src) != th.Dir {
			clearPlaceholder(root, th.Path)
			continue
		}
		fitMountPoint(root, th.Path, th.Dir)
		b.bindFrom(src, path)
	}
	return use, nil
}

// linkIn reports whether rel, or a folder it is in below dir, is a
// symlink.
func linkIn(dir, rel string) bool {
	p := dir
	for _, part := range strings.Split(filepath.Clean(rel), string(filepath.Separator)) {
		p = filepath.Join(p, part)
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return true
		}
	}
	return false
}

// placeIn makes dir, a folder below the state folder in that every
// conversation's agent writes (OpenCode's snapshot folder in its data
// folder), a folder, through an os.Root of in: what is in its place and
// is not a folder goes, a symlink among them (logged: it may be the
// operator's, to another disk; what it leads to stays as it is). A link
// an agent left would have golem make folders, and bubblewrap mount,
// where it leads: over another conversation's worktree, or the root.
// Once mounted on, no agent can move dir: it is a mount point in every
// sandbox that shows it.
func placeIn(in, dir string, log *slog.Logger) error {
	rel, err := filepath.Rel(in, dir)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(in)
	if err != nil {
		return err
	}
	defer root.Close()
	if fi, err := root.Lstat(rel); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		log.Warn("sandbox: a symlink in the CLI's state folder, where each working directory has a folder of its own, is replaced by a folder", "path", dir)
	}
	fitMountPoint(root, rel, true)
	if fi, err := root.Lstat(rel); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a folder", dir)
	}
	return nil
}

// privateState is how a working directory's own state folder is used:
// by n sandboxes, and by its After while after is open.
type privateState struct {
	n     int
	after chan struct{} // closed when the running After returns; nil for none
}

// enterPrivate counts one more sandbox using the folder own, once any
// After running on it has returned: the next sandbox's golem touches
// that folder (fitMountPoint, Seed) and its agent writes it, and After
// must have it to itself (it checks what the agent wrote, then moves
// it).
func (s *Sandbox) enterPrivate(own string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		st := s.privates[own]
		if st == nil {
			st = &privateState{}
			s.privates[own] = st
		}
		if st.after == nil {
			st.n++
			return
		}
		done := st.after
		s.mu.Unlock()
		<-done
		s.mu.Lock()
	}
}

// leavePrivate is enterPrivate undone as a sandbox ends: the last one to
// leave a folder calls its After, and the next sandbox of that folder
// waits for it.
func (s *Sandbox) leavePrivate(uses []privateUse) {
	for _, u := range uses {
		s.mu.Lock()
		st := s.privates[u.own]
		st.n--
		last := st.n == 0
		if last && u.after != nil {
			st.after = make(chan struct{})
		} else if last {
			delete(s.privates, u.own)
		}
		s.mu.Unlock()
		if !last || u.after == nil {
			continue
		}
		if root, err := os.OpenRoot(u.own); err == nil {
			u.after(root)
			root.Close()
		}
		s.mu.Lock()
		close(st.after)
		st.after = nil
		if st.n == 0 {
			delete(s.privates, u.own)
		}
		s.mu.Unlock()
	}
}

// shareable returns what to show of the real path p, a file or folder:
// p itself, or where its symlink leads if that is outside dir and
// outside everything b masks (a link to bot.yaml, bound over its mask,
// would show it). ok is false for a missing p, or one that is neither a
// file nor a folder.
func (t *Turn) shareable(b *builder, p, dir string) (string, bool) {
	fi, err := os.Lstat(p)
	if err != nil {
		return "", false
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(p)
		if err != nil || within(target, dir) || b.hides(target) {
			t.s.log.Warn("sandbox: a symlink in the CLI's state folder is not shown to the agent", "path", p)
			return "", false
		}
		p = target
		if fi, err = os.Stat(p); err != nil {
			return "", false
		}
	}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		return "", false
	}
	return p, true
}

// fitMountPoint makes what bubblewrap mounts name on in own the right
// kind: what is there of another kind (a folder where a file is shared,
// a symlink the agent left in the way) goes, and the folders above it
// are made, so that the mount neither fails nor follows a link.
func fitMountPoint(own *os.Root, name string, dir bool) {
	parts := strings.Split(filepath.Clean(name), string(filepath.Separator))
	for i := range parts {
		p := filepath.Join(parts[:i+1]...)
		fi, err := own.Lstat(p)
		last := i == len(parts)-1
		if err == nil && (fi.Mode()&fs.ModeSymlink != 0 || (!last || dir) != fi.IsDir()) {
			own.RemoveAll(p)
		}
	}
	if dir {
		own.MkdirAll(name, 0o700)
		return
	}
	own.MkdirAll(filepath.Dir(name), 0o700)
	if f, err := own.OpenFile(name, os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		f.Close()
	}
}

// clearPlaceholder removes the empty file or folder a mount of name left
// in own once the real one is gone: an empty settings.json would not
// parse. What the agent wrote there itself stays.
func clearPlaceholder(own *os.Root, name string) {
	fi, err := own.Lstat(name)
	if err != nil {
		return
	}
	if fi.Mode().IsRegular() && fi.Size() == 0 {
		own.Remove(name)
	} else if fi.IsDir() {
		own.Remove(name) // only when empty
	}
}

// Forget removes the CLI state workdir kept of its own (see Private),
// once golem has removed workdir itself (an idle worktree cleaned up); a
// sandbox still using it keeps it.
func (s *Sandbox) Forget(workdir string) error {
	if s == nil || s.stateDir == "" {
		return nil
	}
	dir := filepath.Join(s.stateDir, stateKey(workdir))
	s.mu.Lock()
	defer s.mu.Unlock()
	for own := range s.privates {
		if within(own, dir) {
			return nil
		}
	}
	return os.RemoveAll(dir)
}
