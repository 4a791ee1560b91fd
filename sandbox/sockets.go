package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
// are the sandbox's own, and the sockets below $HOME and /var are masked
// one by one (sockets). The proxy's port is in the sandbox's own network
// namespace (package proxyport): no other sandbox reaches it.

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

// A socket walk's bounds: it takes some 30 ms for a home of caches
// (~/.npm, ~/.cache, ~/go/pkg: 20000 entries).
const socketWalkEntries = 20000

// socketRescan is how old the last walk of a folder may be before a turn
// starts another one, in the background.
const socketRescan = 10 * time.Second

// socketFolder is a folder of the host that is walked for sockets: its
// depth bound, and folders below it not walked (masked whole, or big and
// without sockets).
type socketFolder struct {
	dir   string
	depth int
	skip  []string
}

// socketFolders are the folders walked for every sandbox: home (depth 4:
// ~/.colima/default/docker.sock is 3), and /var (depth 5: LXD's
// /var/snap/lxd/common/lxd/unix.socket; also MySQL's in /var/lib/mysql,
// Postfix's in /var/spool/postfix, the kubelet's in /var/lib/kubelet).
func socketFolders(home string) []socketFolder {
	var out []socketFolder
	if home != "" && home != "/" {
		f := socketFolder{dir: home, depth: 4}
		for _, rel := range credentials {
			f.skip = append(f.skip, filepath.Join(home, rel))
		}
		out = append(out, f)
	}
	return append(out, socketFolder{dir: "/var", depth: 5,
		skip: []string{"/var/lib/docker", "/var/lib/containers", "/var/cache", "/var/log", "/var/run"}})
}

// socketScan is the last walk of one folder.
type socketScan struct {
	mu      sync.Mutex
	at      time.Time // zero before the first walk
	found   []string
	walking bool // a walk in the background
}

// sockets returns the Unix sockets in f (see walkSockets). A walk costs
// more than a turn's start may, so only a folder's first turn waits for
// one; later turns take the last walk's, and one older than socketRescan
// starts a new walk in the background. A socket made since the last walk
// (at most socketRescan before it) is not masked.
func (s *Sandbox) sockets(f socketFolder) []string {
	s.mu.Lock()
	sc := s.scans[f.dir]
	if sc == nil {
		if s.scans == nil {
			s.scans = map[string]*socketScan{}
		}
		sc = &socketScan{}
		s.scans[f.dir] = sc
	}
	s.mu.Unlock()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	switch {
	case sc.at.IsZero():
		sc.found, sc.at = walkSockets(f), time.Now()
	case time.Since(sc.at) > socketRescan && !sc.walking:
		sc.walking = true
		go func() {
			found := walkSockets(f)
			sc.mu.Lock()
			sc.found, sc.at, sc.walking = found, time.Now(), false
			sc.mu.Unlock()
		}()
	}
	return sc.found
}

// walkSockets returns the Unix sockets at most f.depth levels below
// f.dir (an SSH or GPG agent's, a rootless Docker's, an editor's, a
// database's), outside f.skip, node_modules and .git, in at most
// socketWalkEntries entries.
func walkSockets(f socketFolder) []string {
	var out []string
	n := 0
	filepath.WalkDir(f.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if n++; n > socketWalkEntries {
			return fs.SkipAll
		}
		if d.Type()&fs.ModeSocket != 0 {
			out = append(out, p)
			return nil
		}
		if !d.IsDir() || p == f.dir {
			return nil
		}
		if slices.Contains(f.skip, p) || d.Name() == "node_modules" || d.Name() == ".git" ||
			strings.Count(p[len(f.dir):], "/") >= f.depth {
			return fs.SkipDir
		}
		return nil
	})
	return out
}

// reachable reports whether the sandbox's processes can reach p: every
// folder above it lets them through (search permission). They keep
// golem's user and groups but, in a user namespace of their own, not
// root's power over other users' files: a root golem's walk finds the
// sockets in a folder only its owner may enter (/var/lib/mysql, another
// user's /var/tmp/x), which no agent can connect to, and a mask there
// fails bubblewrap ("Can't mkdir parents … Permission denied"), so
// every sandbox's start (seen in CI: the unprivileged test's socket).
func reachable(p string) bool {
	uid := os.Geteuid()
	gids, _ := os.Getgroups()
	gids = append(gids, os.Getegid())
	for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err != nil {
			return false
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return true
		}
		mode := fi.Mode().Perm()
		var x fs.FileMode
		switch {
		case int(st.Uid) == uid:
			x = 0o100
		case slices.Contains(gids, int(st.Gid)):
			x = 0o010
		default:
			x = 0o001
		}
		if mode&x == 0 {
			return false
		}
		if dir == "/" || dir == "." {
			return true
		}
	}
}
