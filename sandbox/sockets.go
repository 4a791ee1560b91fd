package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The host's Unix sockets. A read-only mount does not stop connect(): a
// socket the agent can see is one it can talk to (Docker's is root on the
// host, D-Bus and systemd's start services, PostgreSQL's trusts its local
// users). Every network mode has a network namespace of its own, which
// takes away the host's abstract sockets (X11, containerd's shims); the
// path sockets are hidden where they live: /tmp and /run (with /var/run)
// are the sandbox's own, the sockets below $HOME are masked one by one
// (homeSockets), and golem's other proxy sockets are in one folder that
// every sandbox masks (proxyDir).

// privateRun gives the sandbox empty /run and /var/run of its own. The
// top-level symlinks of the host's /run that lead to a folder elsewhere
// are kept (NixOS's /run/current-system holds the PATH, /run/shm leads to
// /dev/shm); nothing else is: with no network of the sandbox's own (the
// proxy resolves names) it needs no /run/systemd/resolve either.
func (b *builder) privateRun() {
	for _, d := range runDirs {
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			continue // missing, or /var/run → /run
		}
		b.args = append(b.args, "--tmpfs", d)
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			p := filepath.Join(d, e.Name())
			if e.Type()&fs.ModeSymlink == 0 {
				continue
			}
			target, err := os.Readlink(p)
			if err != nil {
				continue
			}
			if r := realpath(p); isDir(r) && !private(r) {
				b.args = append(b.args, "--symlink", target, p)
			}
		}
	}
}

// private reports whether p is in a folder the sandbox has of its own
// (/tmp, /run, /var/run): nothing of the host's shows there, so it needs
// no mask.
func private(p string) bool {
	if within(p, "/tmp") {
		return true
	}
	for _, d := range runDirs {
		if within(p, d) {
			return true
		}
	}
	return false
}

// Bounds of scanHome's walk, which takes some 30 ms for a home of
// caches (~/.npm, ~/.cache, ~/go/pkg: 20000 entries).
const (
	homeSocketDepth   = 4 // ~/.colima/default/docker.sock is 3
	homeSocketEntries = 20000
)

// homeRescan is how old homeSockets' last walk of a home may be before a
// turn starts another one, in the background.
const homeRescan = 10 * time.Second

// homeScan is the last walk of one home.
type homeScan struct {
	mu      sync.Mutex
	at      time.Time // zero before the first walk
	found   []string
	walking bool // a walk in the background
}

// homeSockets returns the Unix sockets below home (see scanHome). A walk
// costs more than a turn's start may, so only a home's first turn waits
// for one; later turns take the last walk's, and one older than
// homeRescan starts a new walk in the background. A socket made since
// the last walk (at most homeRescan before it) is not masked.
func (s *Sandbox) homeSockets(home string) []string {
	s.mu.Lock()
	sc := s.homes[home]
	if sc == nil {
		if s.homes == nil {
			s.homes = map[string]*homeScan{}
		}
		sc = &homeScan{}
		s.homes[home] = sc
	}
	s.mu.Unlock()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	switch {
	case sc.at.IsZero():
		sc.found, sc.at = scanHome(home), time.Now()
	case time.Since(sc.at) > homeRescan && !sc.walking:
		sc.walking = true
		go func() {
			found := scanHome(home)
			sc.mu.Lock()
			sc.found, sc.at, sc.walking = found, time.Now(), false
			sc.mu.Unlock()
		}()
	}
	return sc.found
}

// scanHome returns the Unix sockets at most homeSocketDepth levels below
// home (an SSH or GPG agent's, a rootless Docker's, an editor's), outside
// the credentials that are masked whole, node_modules and .git.
func scanHome(home string) []string {
	skip := make(map[string]bool, len(credentials))
	for _, rel := range credentials {
		skip[filepath.Join(home, rel)] = true
	}
	var out []string
	n := 0
	filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if n++; n > homeSocketEntries {
			return fs.SkipAll
		}
		if d.Type()&fs.ModeSocket != 0 {
			out = append(out, p)
			return nil
		}
		if !d.IsDir() || p == home {
			return nil
		}
		if skip[p] || d.Name() == "node_modules" || d.Name() == ".git" ||
			strings.Count(p[len(home):], "/") >= homeSocketDepth {
			return fs.SkipDir
		}
		return nil
	})
	return out
}

// proxyDir makes the folder of one turn's proxy socket. The folders of
// all turns are in one of golem's (made with the first, removed with the
// last), which every sandbox masks: where golem's TMPDIR is not /tmp, the
// other conversations' proxies would be in sight otherwise.
func (s *Sandbox) proxyDir() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proxyRoot == "" {
		root, err := os.MkdirTemp("", proxyRootPrefix+strconv.Itoa(os.Getpid())+"-")
		if err != nil {
			return "", err
		}
		s.proxyRoot = root
	}
	dir, err := os.MkdirTemp(s.proxyRoot, "turn-")
	if errors.Is(err, fs.ErrNotExist) { // removed under golem's feet (a TMPDIR cleaner)
		if err = os.Mkdir(s.proxyRoot, 0o700); err == nil {
			dir, err = os.MkdirTemp(s.proxyRoot, "turn-")
		}
	}
	if err != nil {
		return "", err
	}
	s.proxyDirs++
	return dir, nil
}

// proxyRootPrefix begins the name of golem's folder of proxy folders in
// TMPDIR, followed by golem's pid: a golem killed while turns ran leaves
// it behind, and the next one removes it (removeStaleProxyRoots).
const proxyRootPrefix = "golem-sandbox-"

// removeStaleProxyRoots removes the folders of proxy folders in TMPDIR
// that golem processes no longer running left behind (killed, they had
// no time to), when they are this user's.
func removeStaleProxyRoots() {
	dir := os.TempDir()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), proxyRootPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		p, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(p)
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue // not one of these, or its golem may still run
		}
		fi, err := e.Info()
		if st, ok := fi.Sys().(*syscall.Stat_t); err != nil || !ok || int(st.Uid) != os.Geteuid() {
			continue
		}
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// removeProxyDir removes a folder proxyDir made, and golem's folder with
// the last.
func (s *Sandbox) removeProxyDir(dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	os.RemoveAll(dir)
	if s.proxyDirs--; s.proxyDirs == 0 {
		os.Remove(s.proxyRoot)
		s.proxyRoot = ""
	}
}
