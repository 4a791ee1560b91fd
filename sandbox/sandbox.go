// Package sandbox runs an agent's CLI inside bubblewrap (bwrap): the host's
// file system read-only, writable only where the conversation works, with
// golem's store, its configuration, the other conversations and the
// credentials in the home directory hidden, a PID namespace of its own, and
// the network as the policy says (see Network). It knows nothing of
// engines or chats: the engine tells it what the CLI writes (Command.State)
// and which model API it calls (Command.APIHosts); core tells it where the
// conversation works (Place) and the channel's policy.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Mode is sandbox.mode.
type Mode string

const (
	// ModeAuto sandboxes where bubblewrap works here, and runs agents
	// unsandboxed with a warning where it does not.
	ModeAuto Mode = "auto"
	// ModeOn sandboxes every agent; golem refuses to start where it cannot.
	ModeOn Mode = "on"
	// ModeOff runs agents without a sandbox.
	ModeOff Mode = "off"
)

// Network is sandbox.network.
type Network string

const (
	// Allowlist: no network of the sandbox's own; golem's proxy lets
	// through the engine's model API and allow_hosts.
	Allowlist Network = "allowlist"
	// Open: no network of the sandbox's own either; golem's proxy lets
	// through every host but this machine's own addresses (loopback,
	// link-local, its interfaces'), unless allow_hosts names them.
	Open Network = "open"
	// None: no network at all, the model API included.
	None Network = "none"
)

// Config is the sandbox: section of bot.yaml, and a channel's
// channels.<key>.sandbox, where an empty mode or network keeps the global
// one and allow_hosts and writable add to the global lists.
type Config struct {
	Mode       Mode     `yaml:"mode"`
	Network    Network  `yaml:"network"`
	AllowHosts []string `yaml:"allow_hosts"`
	Writable   []string `yaml:"writable"`
}

// Default is the sandbox of a bot.yaml that says nothing of it.
func Default() Config { return Config{Mode: ModeAuto, Network: Allowlist} }

// With returns c overridden by a channel's o.
func (c Config) With(o Config) Config {
	if o.Mode != "" {
		c.Mode = o.Mode
	}
	if o.Network != "" {
		c.Network = o.Network
	}
	c.AllowHosts = append(append([]string(nil), c.AllowHosts...), o.AllowHosts...)
	c.Writable = append(append([]string(nil), c.Writable...), o.Writable...)
	return c
}

// Validate checks c's values; errors name the key below prefix
// ("sandbox", "channels.slack:C1.sandbox"). A channel's empty values are
// valid (they keep the global ones).
func (c Config) Validate(prefix string) error {
	switch c.Mode {
	case "", ModeAuto, ModeOn, ModeOff:
	default:
		return fmt.Errorf("%s.mode: %q is not auto, on or off", prefix, c.Mode)
	}
	switch c.Network {
	case "", Allowlist, Open, None:
	default:
		return fmt.Errorf("%s.network: %q is not allowlist, open or none", prefix, c.Network)
	}
	for i, h := range c.AllowHosts {
		if _, err := parseHostRule(h); err != nil {
			return fmt.Errorf("%s.allow_hosts[%d]: %w", prefix, i, err)
		}
	}
	for i, w := range c.Writable {
		if !filepath.IsAbs(w) {
			return fmt.Errorf("%s.writable[%d]: %q must be an absolute path", prefix, i, w)
		}
	}
	return nil
}

// Status is what Probe learned of this machine.
type Status struct {
	Bwrap string // the bwrap found, "" when none
	// Err says why bwrap cannot sandbox here, with what to install or
	// enable; nil when it works.
	Err error
}

// Works reports whether bwrap sandboxes here.
func (s Status) Works() bool { return s.Err == nil }

// probeTimeout bounds the probe's sandbox.
const probeTimeout = 10 * time.Second

// Probe finds bwrap and starts one sandbox as agents get it (user and PID
// namespaces, no network) running /bin/true.
func Probe(ctx context.Context) Status {
	var st Status
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		st.Err = errors.New("bubblewrap is not installed: install it (`apt-get install bubblewrap`, `dnf install bubblewrap`)")
		return st
	}
	st.Bwrap = bwrap
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		"--unshare-user", "--cap-drop", "ALL", "--disable-userns",
		"--unshare-pid", "--unshare-net", "--die-with-parent", "--new-session", "--", "/bin/true")
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		st.Err = fmt.Errorf("bubblewrap cannot make a sandbox here (%s): enable unprivileged user namespaces "+
			"(sysctl kernel.unprivileged_userns_clone=1, and on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0), "+
			"or run golem where it may create namespaces", msg)
	}
	return st
}

// Options are what New needs besides the configuration.
type Options struct {
	// Hide are paths no agent may see: golem's store folder, its
	// configuration file, any file golem was started with secrets in.
	Hide []string
	// StateDir is where golem keeps the CLI state each working
	// directory has of its own (see Private), hidden from every agent
	// like the store; "" for one in the temporary folder.
	StateDir string
	// Channels are the channels' sandbox sections, to check that what
	// they ask for can work (a channel with mode: on).
	Channels map[string]Config
	Logger   *slog.Logger
	// Probe, when set, replaces Probe (tests).
	Probe func(context.Context) Status
}

// Sandbox is golem's sandbox, made once at start. Its methods may be called
// concurrently.
type Sandbox struct {
	cfg  Config
	st   Status
	hide []string
	// stateDir is Options.StateDir, absolute.
	stateDir string
	log      *slog.Logger
	// Off says why agents run unsandboxed by mode auto ("" when they do
	// not).
	off string

	mu    sync.Mutex
	runs  int                    // sandboxes running, for tests and benchmarks
	scans map[string]*socketScan // the sockets in each socketFolder (sockets)
	// privates is how each working directory's own state folder is
	// used: the sandboxes running or being set up with it, and its After
	// (see enterPrivate).
	privates map[string]*privateState
}

// ErrUnavailable is wrapped by New when sandbox.mode: on (global or a
// channel's) cannot work here.
var ErrUnavailable = errors.New("the sandbox cannot work here")

// New probes the machine once and returns golem's sandbox. With mode on
// (globally or for a channel) where bwrap does not work, it fails naming
// sandbox.mode and what to install or enable; with auto it logs a warning and runs agents
// unsandboxed (Off says why).
func New(ctx context.Context, cfg Config, o Options) (*Sandbox, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeAuto
	}
	if cfg.Network == "" {
		cfg.Network = Allowlist
	}
	s := &Sandbox{cfg: cfg, log: o.Logger, privates: map[string]*privateState{}}
	for _, h := range o.Hide {
		if h != "" {
			if abs, err := filepath.Abs(h); err == nil {
				s.hide = append(s.hide, abs)
			}
		}
	}
	s.stateDir = o.StateDir
	if s.stateDir == "" {
		s.stateDir = filepath.Join(os.TempDir(), "golem-agent-state-"+strconv.Itoa(os.Getuid()))
	}
	if abs, err := filepath.Abs(s.stateDir); err == nil {
		s.stateDir = abs
	}
	s.hide = append(s.hide, s.stateDir)
	modes := map[Mode]string{} // which key asks for each mode
	each := func(key string, c Config) {
		if _, ok := modes[c.Mode]; !ok {
			modes[c.Mode] = key
		}
	}
	each("sandbox", cfg)
	for k, ch := range o.Channels {
		each("channels."+k+".sandbox", cfg.With(ch))
	}
	if len(modes) == 1 && cfg.Mode == ModeOff {
		s.off = "sandbox.mode is off"
		return s, nil
	}
	probe := o.Probe
	if probe == nil {
		probe = Probe
	}
	s.st = probe(ctx)
	if why := s.st.Err; why != nil {
		if key, ok := modes[ModeOn]; ok {
			return nil, fmt.Errorf("%s.mode: on, but %w: %w", key, ErrUnavailable, why)
		}
		s.off = why.Error()
		s.log.Warn("sandbox: agents run WITHOUT a sandbox (sandbox.mode: auto)", "why", why)
		return s, nil
	}
	return s, nil
}

// Status is what the probe found (zero when mode off asked for none).
func (s *Sandbox) Status() Status { return s.st }

// Off says why mode auto runs agents unsandboxed, "" when it sandboxes.
func (s *Sandbox) Off() string { return s.off }

// Config is the global sandbox configuration.
func (s *Sandbox) Config() Config { return s.cfg }

// Place is where one turn's agent works, as core knows it.
type Place struct {
	Workdir string // the agent's working directory
	// Tree is the conversation's git worktree (its top level) with
	// isolation: worktree, "" when shared; Repo is the configured
	// folder it is made from (the main checkout, or a folder in it).
	Tree, Repo string
	// Branch is the worktree's branch (golem/<name>), the one ref the
	// agent may move. It is golem's word, not the worktree's HEAD, which
	// the agent writes: a HEAD turned to main must not make main's ref
	// writable in the next turn.
	Branch string
	// Files are the turn's attachments, in Workdir's inbox/.
	Files []string
}

// Turn is one turn's sandbox: golem's, the channel's policy and the
// place. A nil *Turn is no sandbox.
type Turn struct {
	s      *Sandbox
	policy Config
	place  Place
}

// Turn returns the sandbox of a turn in channel (its channels.<key>.sandbox
// section, zero for none) at place; nil when its agent runs unsandboxed
// (mode off, or auto where bwrap does not work).
func (s *Sandbox) Turn(channel Config, place Place) *Turn {
	if s == nil {
		return nil
	}
	p := s.cfg.With(channel)
	// With s.off set no channel has mode on: New refused to start then.
	if p.Mode == ModeOff || s.off != "" {
		return nil
	}
	return &Turn{s: s, policy: p, place: place}
}

// Network is the turn's network policy.
func (t *Turn) Network() Network { return t.policy.Network }
