package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/golem-chat/golem/sandbox/proxyport"
	"golang.org/x/sys/unix"
)

// Command is an agent's CLI as the engine would start it unsandboxed.
type Command struct {
	Path string   // the CLI, absolute
	Args []string // without argv[0]
	Env  []string // the whole environment (HOME in it)
	// State are the folders the CLI keeps its own state in and writes
	// (~/.claude, ~/.codex, ...); missing ones are made. StateEnv are
	// variables the sandboxed CLI gets besides Env, to keep its state in
	// those folders.
	State    []string
	StateEnv []string
	// Private are the state folders each working directory has one of
	// its own inside the sandbox (see Private); one may be below a State
	// folder, to keep a part of it each working directory's own.
	Private []Private
	// APIHosts are the host:port of its model API, which network:
	// allowlist lets through besides allow_hosts.
	APIHosts []string
}

// Jail is one started sandbox's command and what it holds: its proxy, the
// socket its port comes through and the pipe bwrap reports on. Close it
// once the process has exited.
type Jail struct {
	Path string   // bwrap
	Args []string // without argv[0]
	Env  []string
	// Extra are the ExtraFiles of the process: fd 3 is bwrap's status
	// pipe, fd 4 its arguments; with a network, fd 5 the socket the
	// proxy's port comes through and fd 6 golem's executable (see package
	// proxyport).
	Extra []*os.File

	// mounts are bwrap's own arguments, which it reads from fd 4 (--args)
	// rather than its command line: in the sandbox that is /proc/1/cmdline,
	// and it names every hidden path.
	mounts []string

	status  *os.File // read end of the status pipe
	started chan bool
	proxy   *Proxy
	// port is golem's end of the socket pair the sandbox's proxy port
	// comes through (see package proxyport); opened says, once, whether
	// it came.
	port   *net.UnixConn
	opened chan bool
	turn   *Turn
	// privates are the working directories' own state folders it uses.
	privates []privateUse
	once     sync.Once
}

// agentID is the uid and gid of the agent inside the sandbox when golem
// runs as root: nobody's, which every system has in /etc/passwd.
const agentID = "65534"

// credentials are the paths below $HOME hidden from every agent: keys,
// tokens and logins of other tools. The rest of $HOME stays visible,
// read-only.
var credentials = []string{
	".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".config/gh", ".config/hub", ".config/glab-cli",
	".netrc", ".git-credentials", ".docker", ".kube", ".npmrc", ".yarnrc", ".pypirc", ".pgpass", ".my.cnf",
	".password-store", ".local/share/keyrings", ".vault-token", ".terraform.d", ".config/rclone", ".s3cfg",
	".boto", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials", ".config/op", ".m2/settings.xml",
	".config/cursor", ".cursor", ".codex", ".gemini", ".claude", ".claude.json", ".local/share/opencode", ".config/opencode",
	".local/state/opencode", // the prompts typed in OpenCode's terminal UI
}

// hidden are host paths no agent sees besides golem's own (Options.Hide).
var hidden = []string{"/etc/golem"}

// runDirs are where the host's services keep their Unix sockets (Docker,
// containerd, D-Bus, systemd, PostgreSQL, the user's session in
// /run/user): connect() reaches a socket through a read-only mount, so
// each gets an empty tmpfs of the sandbox's own, as /tmp does. /var/run
// is one of its own only where it is not the usual symlink to /run.
var runDirs = []string{"/run", "/var/run"}

// Wrap returns the sandboxed command for c: bwrap around it, and, with
// network: allowlist, golem's proxy listening on a socket bound into the
// sandbox. An error means nothing was started (a state folder that
// cannot be made, a proxy that cannot listen).
func (t *Turn) Wrap(c Command) (*Jail, error) {
	home := getenv(c.Env, "HOME")
	var b builder
	// A user namespace with no capabilities in it, and none nested: run by
	// root, bwrap would otherwise keep root's capabilities inside, and the
	// agent could unmount the masks (found by review).
	b.args = []string{"--unshare-user", "--cap-drop", "ALL", "--disable-userns",
		"--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"}
	if os.Geteuid() == 0 {
		// Not root inside either: tools that trust uid 0 (or refuse it)
		// see nobody. It stands for root outside, so what root owns (the
		// CLI's state folders, $HOME) is still its own to read and write
		// where the mounts allow; no capability comes with it.
		b.args = append(b.args, "--uid", agentID, "--gid", agentID)
	}
	// No network of its own in any mode: with open too the proxy is the
	// way out, which keeps this machine's loopback (golem's HTTP API) and
	// its abstract sockets out of reach.
	b.args = append(b.args, "--unshare-net")
	b.args = append(b.args, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp")
	b.privateRun()

	// Hidden: golem's own files, credentials in $HOME, then what belongs
	// to the other conversations. The CLI's own state comes back below.
	for _, h := range t.s.hide {
		b.mask(h)
	}
	if home != "" && home != "/" {
		for _, rel := range credentials {
			b.mask(filepath.Join(home, rel))
		}
	}
	for _, h := range hidden {
		b.mask(h)
	}
	for _, f := range socketFolders(home) {
		for _, s := range t.s.sockets(f) {
			// Not one in sandbox.writable: a local model's, given on purpose.
			// Nor one it cannot reach (see reachable).
			if !slices.ContainsFunc(t.policy.Writable, func(w string) bool { return within(s, w) }) && reachable(s) {
				b.mask(s)
			}
		}
	}
	pl := t.place
	var git gitPaths
	if pl.Tree != "" {
		var err error
		if git, err = worktreeGit(pl.Tree, pl.Branch); err != nil {
			return nil, fmt.Errorf("sandbox: worktree %s: %w", pl.Tree, err)
		}
		b.mask(filepath.Dir(pl.Tree))                  // the other conversations' worktrees
		b.mask(filepath.Join(git.common, "worktrees")) // and their git folders
		if pl.Repo != "" {
			b.mask(filepath.Join(pl.Repo, "inbox")) // attachments waiting for other conversations
			b.mask(filepath.Join(pl.Repo, "outbox"))
		}
	}

	// Writable.
	if pl.Tree != "" {
		b.bind(pl.Tree)
		b.bind(git.dir)
		b.bind(filepath.Join(git.common, "objects"))
		if git.refDir != "" {
			b.bind(git.refDir)
			for _, other := range git.otherRefs {
				b.roBind(other) // the other branches' refs stay as they are
			}
		}
		if git.reflog != "" {
			b.bind(git.reflog)
		}
		// What says where the worktree's repository is stays as it is: a
		// commondir or .git file turned elsewhere would have golem's own
		// git (outside the sandbox) run a repository of the agent's making
		// (its hooks, its core.fsmonitor).
		for _, f := range git.pointers {
			b.roBind(f)
		}
	} else {
		b.bind(pl.Workdir)
		inbox := filepath.Join(pl.Workdir, "inbox")
		if isDir(inbox) { // shared: only this turn's attachments
			b.mask(inbox)
			for _, f := range pl.Files {
				if strings.HasPrefix(f, inbox+"/") {
					b.roBind(f)
				}
			}
		}
	}
	if pl.Tree != "" && pl.Workdir != "" && !within(pl.Workdir, pl.Tree) {
		b.bind(pl.Workdir)
	}
	for _, st := range c.State {
		if _, err := os.Lstat(st); errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(st, 0o700); err != nil {
				return nil, fmt.Errorf("sandbox: make the CLI's state folder: %w", err)
			}
		}
		b.bind(st)
	}
	var uses []privateUse
	for _, p := range c.Private {
		in := ""
		for _, st := range c.State {
			if within(p.Dir, st) && p.Dir != st {
				in = st
			}
		}
		u, err := t.private(&b, p, pl.Workdir, in)
		uses = append(uses, u)
		if err != nil {
			t.s.leavePrivate(uses)
			return nil, err
		}
	}
	for _, w := range t.policy.Writable {
		if _, err := os.Stat(w); err != nil {
			t.s.log.Warn("sandbox: a sandbox.writable path is missing; the agent runs without it", "path", w)
			continue
		}
		b.bind(w)
	}
	// The CLI itself, where the private /tmp or a mask would hide it.
	for _, p := range []string{c.Path, realpath(c.Path)} {
		if within(p, "/tmp") {
			b.roBind(installRoot(p))
		}
	}

	env := withoutProxies(c.Env)
	env = append(env, c.StateEnv...)
	env = append(env, "TMPDIR=/tmp")
	j := &Jail{turn: t, started: make(chan bool, 1), privates: uses}
	if t.policy.Network != None {
		url := "http://127.0.0.1:" + strconv.Itoa(proxyport.Port)
		for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy"} {
			env = append(env, k+"="+url)
		}
	}
	b.emit()
	if c.Path != "" {
		b.args = append(b.args, "--chdir", pl.Workdir)
	}
	r, w, err := os.Pipe()
	if err != nil {
		j.Close()
		return nil, fmt.Errorf("sandbox: status pipe: %w", err)
	}
	j.status, j.Extra = r, []*os.File{w}
	j.mounts = append(b.args, "--json-status-fd", "3")
	argFile, err := argsFile(j.mounts)
	if err != nil {
		r.Close()
		j.Close()
		return nil, fmt.Errorf("sandbox: bubblewrap's arguments: %w", err)
	}
	j.Extra = append(j.Extra, argFile)
	args := []string{"--args", "4", "--"}
	if t.policy.Network != None {
		hand, exe, err := j.listen(append(slices.Clone(c.APIHosts), t.policy.AllowHosts...))
		if err != nil {
			r.Close()
			j.Close()
			return nil, err
		}
		j.Extra = append(j.Extra, hand, exe) // fds 5 and 6: proxyport.HandFD, ExeFD
		args = append(args, proxyport.Exe, proxyport.Arg)
	}
	args = append(args, c.Path)
	args = append(args, c.Args...)
	j.Path, j.Args, j.Env = t.s.st.Bwrap, args, env
	go j.watch()
	t.s.mu.Lock()
	t.s.runs++
	t.s.mu.Unlock()
	return j, nil
}

// Mounts is bwrap's arguments up to the command, for a debug log.
func (j *Jail) Mounts() string { return strings.Join(j.mounts, " ") }

// argsFile returns a memory file holding args as bwrap's --args reads
// them (each ended by a NUL), at its start.
func argsFile(args []string) (*os.File, error) {
	fd, err := unix.MemfdCreate("golem-bwrap-args", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "golem-bwrap-args")
	var buf strings.Builder
	for _, a := range args {
		buf.WriteString(a)
		buf.WriteByte(0)
	}
	if _, err := io.WriteString(f, buf.String()); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// listen starts the turn's proxy, to serve on the port the sandbox's
// first process opens and sends over the socket pair (package proxyport).
// It returns what the sandbox's command gets as fds 5 and 6: the pair's
// other end and golem's own executable.
func (j *Jail) listen(hosts []string) (hand, exe *os.File, err error) {
	if j.proxy, err = NewProxy(j.turn.policy.Network, hosts, j.turn.s.log); err != nil {
		return nil, nil, fmt.Errorf("sandbox: %w", err)
	}
	// The executable running now, even where its file was replaced or
	// removed since: what proxyport does is this build's.
	if exe, err = os.Open("/proc/self/exe"); err != nil {
		return nil, nil, fmt.Errorf("sandbox: golem's executable: %w", err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		exe.Close()
		return nil, nil, fmt.Errorf("sandbox: the proxy port's socket pair: %w", err)
	}
	mine := os.NewFile(uintptr(fds[0]), "golem-proxy-port")
	hand = os.NewFile(uintptr(fds[1]), "golem-proxy-port-hand")
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		exe.Close()
		hand.Close()
		return nil, nil, fmt.Errorf("sandbox: the proxy port's socket pair: %w", err)
	}
	j.port, j.opened = c.(*net.UnixConn), make(chan bool, 1)
	go j.serve()
	return hand, exe, nil
}

// serve waits for the sandbox's proxy port and serves the proxy on it
// until Close. Nothing comes when the sandbox ended first (bubblewrap
// failed, or the port could not open: its stderr says why).
func (j *Jail) serve() {
	l := j.receive()
	j.port.Close() // one port a sandbox: what else came is not golem's
	j.opened <- l != nil
	if l != nil {
		j.proxy.Serve(l)
	}
}

// receive reads the listening socket from the socket pair; nil when none
// came.
func (j *Jail) receive() net.Listener {
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := j.port.ReadMsgUnix(make([]byte, 1), oob)
	if err != nil || oobn == 0 {
		return nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil
	}
	f := os.NewFile(uintptr(fds[0]), "golem-proxy-port")
	defer f.Close()
	l, err := net.FileListener(f)
	if err != nil {
		j.turn.s.log.Warn("sandbox: what came from the sandbox is not a listening socket", "err", err)
		return nil
	}
	return l
}

// watch reads bwrap's status pipe: a child-pid line once the sandbox is
// made and the command about to run.
func (j *Jail) watch() {
	sc := bufio.NewScanner(j.status)
	ok := false
	for sc.Scan() {
		var st struct {
			ChildPID int `json:"child-pid"`
		}
		if json.Unmarshal(sc.Bytes(), &st) == nil && st.ChildPID > 0 && !ok {
			ok = true
			j.started <- true
		}
	}
	if !ok {
		j.started <- false
	}
	j.status.Close()
}

// Started reports, once the process has exited, whether the sandbox was
// made and the CLI started in it: false means bwrap itself failed, or,
// with a network, the proxy's port did not open inside (their stderr says
// why).
func (j *Jail) Started() bool {
	ok := <-j.started
	j.started <- ok
	if ok && j.opened != nil {
		ok = <-j.opened
		j.opened <- ok
	}
	return ok
}

// AfterStart is called by the engine right after the process started:
// the parent's copies of the process's extra files (the status pipe's
// write end, the port's socket pair end, golem's executable) must go.
func (j *Jail) AfterStart() {
	for _, f := range j.Extra {
		f.Close()
	}
}

// Close stops the proxy and closes its port. It may be called more than
// once.
func (j *Jail) Close() {
	j.once.Do(func() {
		j.AfterStart()
		if j.proxy != nil {
			j.proxy.Close()
		}
		if j.port != nil {
			j.port.Close()
		}
		if j.turn != nil {
			j.turn.s.leavePrivate(j.privates)
		}
		if j.turn != nil && j.Path != "" {
			j.turn.s.mu.Lock()
			j.turn.s.runs--
			j.turn.s.mu.Unlock()
		}
	})
}

// builder collects bwrap's mount arguments and emits them in an order
// that works whatever nests in what (emit).
type builder struct {
	args                  []string
	binds, masks, roBinds []string
	// from is where a bind's source is, by its path inside, where the
	// two differ (a working directory's own state folder).
	from map[string]string
}

// mask hides p: a folder becomes an empty read-only one, a file an empty
// read-only one; a missing p needs nothing.
func (b *builder) mask(p string) {
	if _, err := os.Stat(p); err == nil && !slices.Contains(b.masks, p) {
		b.masks = append(b.masks, p)
	}
}

// hides reports whether p is in something masked: golem's own files,
// the credentials in $HOME, the other conversations' worktrees, ...
func (b *builder) hides(p string) bool {
	return slices.ContainsFunc(b.masks, func(m string) bool { return within(p, m) })
}

// unseen reports whether nothing of the host's shows at p inside, so that
// it needs no mask: it is in a folder the sandbox has of its own (/tmp,
// /run) and no bind brings it back (a workspace in the host's /tmp, with
// an inbox/ to mask in it).
func (b *builder) unseen(p string) bool {
	if !private(p) {
		return false
	}
	for _, q := range append(slices.Clone(b.binds), b.roBinds...) {
		if within(p, q) {
			return false
		}
	}
	return true
}

// bind makes p writable.
func (b *builder) bind(p string) {
	if p != "" && !slices.Contains(b.binds, p) {
		b.binds = append(b.binds, p)
	}
}

// bindFrom makes src writable at dst.
func (b *builder) bindFrom(src, dst string) {
	b.source(src, dst)
	b.bind(dst)
}

// roBindFrom shows src read-only at dst.
func (b *builder) roBindFrom(src, dst string) {
	b.source(src, dst)
	b.roBind(dst)
}

func (b *builder) source(src, dst string) {
	if src != dst {
		if b.from == nil {
			b.from = map[string]string{}
		}
		b.from[dst] = src
	}
}

// src is the host path a bind at p shows.
func (b *builder) src(p string) string {
	if s, ok := b.from[p]; ok {
		return s
	}
	return p
}

// installRoot is the folder to show for a CLI at p: a Node CLI's whole
// node_modules (its own package and the ones it loads, such as Codex's
// platform binary in @openai/codex-linux-x64), else p's folder.
func installRoot(p string) string {
	if i := strings.Index(p, "/node_modules/"); i >= 0 {
		return p[:i+len("/node_modules")]
	}
	return filepath.Dir(p)
}

// roBind shows p read-only where a mask or the private /tmp hides it.
func (b *builder) roBind(p string) {
	if p != "" && !slices.Contains(b.roBinds, p) { // a CLI whose path is its real one comes twice
		b.roBinds = append(b.roBinds, p)
	}
}

// emit appends the mounts: the writable binds (parents first); then the
// masks (parents first), each followed by the binds below it again, so
// that a mask hides what a bind around it shows (the store kept in the
// workspace) and a bind inside a mask shows through it (a worktree in the
// hidden store's folder); a mask that is itself bound writable (the CLI's
// state folder among the credentials) is left out; then the read-only
// binds; last, the masked folders turn read-only (not earlier: the binds
// inside them need their mount points made).
func (b *builder) emit() {
	byDepth := func(ps []string) []string {
		out := slices.Clone(ps)
		slices.SortStableFunc(out, func(x, y string) int { return len(x) - len(y) })
		return out
	}
	binds := byDepth(b.binds)
	for _, p := range binds {
		b.args = append(b.args, "--bind", b.src(p), p)
	}
	var late []string
	for _, m := range byDepth(b.masks) {
		if slices.Contains(binds, m) || b.unseen(m) {
			continue
		}
		if isDir(m) {
			b.args = append(b.args, "--tmpfs", m)
			late = append(late, "--remount-ro", m)
		} else {
			b.args = append(b.args, "--ro-bind", "/dev/null", m)
		}
		for _, p := range binds {
			if p != m && within(p, m) {
				b.args = append(b.args, "--bind", b.src(p), p)
			}
		}
	}
	for _, p := range b.roBinds {
		b.args = append(b.args, "--ro-bind", b.src(p), p)
	}
	b.args = append(b.args, late...)
}

// gitPaths are what git needs to commit in a worktree.
type gitPaths struct {
	dir       string   // the worktree's own git folder, .git/worktrees/<name>
	common    string   // the main repository's .git
	refDir    string   // the folder of its branch's ref (refs/heads/golem)
	otherRefs []string // the other refs in that folder (no symlinks)
	reflog    string   // its branch's reflog, when there is one
	// pointers are the files that tie the worktree to its repository:
	// its .git file, and gitdir, commondir and config.worktree in dir.
	pointers []string
}

// worktreeGit reads tree's .git file and its commondir; branch is the
// worktree's (golem/<name>), "" for none (a detached HEAD commits into
// the worktree's own folder only). An empty config.worktree is made
// where there is none, so that the agent cannot make one (git reads it
// with extensions.worktreeConfig).
func worktreeGit(tree, branch string) (gitPaths, error) {
	var g gitPaths
	b, err := os.ReadFile(filepath.Join(tree, ".git"))
	if err != nil {
		return g, err
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return g, errors.New(".git is not a worktree's gitdir file")
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(tree, dir)
	}
	g.dir = filepath.Clean(dir)
	common := "../.."
	if b, err := os.ReadFile(filepath.Join(g.dir, "commondir")); err == nil {
		common = strings.TrimSpace(string(b))
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(g.dir, common)
	}
	g.common = filepath.Clean(common)
	g.pointers = []string{filepath.Join(tree, ".git")}
	for _, name := range []string{"gitdir", "commondir", "config.worktree"} {
		p := filepath.Join(g.dir, name)
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) && name == "config.worktree" {
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				return g, err
			}
		}
		if isFile(p) {
			g.pointers = append(g.pointers, p)
		}
	}
	ref := "refs/heads/" + branch
	if branch == "" || strings.Contains(branch, "..") || filepath.Clean(ref) != ref {
		return g, nil
	}
	g.refDir = filepath.Join(g.common, filepath.Dir(ref))
	if err := os.MkdirAll(g.refDir, 0o755); err != nil {
		return g, err
	}
	own := filepath.Join(g.common, ref)
	entries, _ := os.ReadDir(g.refDir)
	for _, e := range entries {
		// Refs are files (and folders of them). The agent writes this
		// folder: a symlink it left here, bound read-only, would have
		// bwrap bind what it points at, over a mask (found by review).
		if p := filepath.Join(g.refDir, e.Name()); p != own && (e.Type().IsRegular() || e.IsDir()) {
			g.otherRefs = append(g.otherRefs, p)
		}
	}
	if log := filepath.Join(g.common, "logs", ref); isFile(log) {
		g.reflog = log
	}
	return g, nil
}

func getenv(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// withoutProxies is env without the proxy variables, which the sandbox
// sets itself (allowlist) or has no use for.
func withoutProxies(env []string) []string {
	out := make([]string, 0, len(env)+8)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "TMPDIR":
			continue
		}
		out = append(out, kv)
	}
	return out
}

func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

func realpath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
