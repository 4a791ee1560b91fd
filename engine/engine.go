// Package engine runs agent CLIs (Claude Code's `claude`, Cursor's `agent`)
// as child processes and turns their stdout into normalized events.
//
// An engine knows its CLI's flags, environment, skill layout and resume
// behaviour; it knows nothing of chat platforms.
//
// The registry (registry.go) lists every engine by its config name, with
// its constructor, parser, default command, install hint and capabilities;
// nothing outside this package spells an engine's name. Adding an engine is
// one new file (its Spec, its Settings type — the engines.<name> section of
// bot.yaml, Config inline plus the CLI's own keys — and its Engine, most
// often a cli with the CLI's arguments) and one line in the registry.
//
// Each run is one process in a process group of its own. Its stdout is read
// as a byte stream split on '\n' (lines of any length, a last line without
// newline included) and parsed by the engine's parser.Parser through a
// parser.Guard; its stderr is kept in a small ring (the last 20 lines,
// at most 8 KiB) to explain a crash. Whatever the process does, the run's
// events end with exactly one terminal event:
//
//   - the CLI's own done or error (a non-zero exit after a done is still done);
//     the error's parser.Reason is parser.Failed;
//   - "the agent ended without a result: exit code N; stderr: ..." (reason
//     parser.Crashed) when the process ends without one; since the message
//     reaches the chat, anything in it shaped like a key or token is
//     replaced by "[redacted]" (see redact), as in the CLI's own error
//     and in the debug log: tokens go nowhere;
//   - "stopped" (parser.Stopped) when ctx is cancelled, "timed out"
//     (parser.TimedOut) when its deadline passes (or its cancel cause wraps
//     context.DeadlineExceeded), with the session id the CLI announced if
//     it did (parser.SessionTeller), so that what the run did can be
//     resumed. Callers branch on the reason, never on the text. The CLI's
//     process group and every process below it (Claude Code runs tool commands in
//     sessions of their own) get SIGTERM, then SIGKILL after two seconds;
//     the terminal event comes after they exited or were sent SIGKILL.
//
// The CLI's own done or error is delivered as soon as its line is parsed,
// while the process may still be finishing (Claude Code writes its session
// file after its result line); Run.Exited says when it is gone. A CLI still
// running killGrace after its result is stopped as above. Only the error
// that the resume fallback below retries waits for its process.
//
// The reading side never waits for the consumer: the output is read in
// large reads, parsed at once and queued; Run.Next hands over everything
// queued in one batch. Events that follow within a window of a few
// milliseconds (coalesce) of the last hand-over are held until the window
// is over (one wake-up of the consumer for many lines); the first after a
// quiet spell is never held, nor is the terminal event once read. After a
// window that held events the output streams steadily, and its reader
// sleeps through windows of 20 ms and takes what came meanwhile in one
// read (see output): one wake-up of golem for many lines, not one per
// line. While it streams so, at a line per 4 ms or faster, a line (the
// terminal one included) waits in the pipe for at most 20 ms; a slower
// stream, and a burst after a quiet spell such as a CLI's last lines and
// its result, are read as they come.
//
// Resume fallback: when a turn with a SessionID fails with an error that
// mentions "resume" or "session" before any answer text, the run emits a
// warning with SessionReset set and retries once, in the same Run, without
// --resume; the new session id arrives with done.
//
// Steering: Run.Steer writes another user message on the stdin of a
// Claude Code run while it runs. The CLI takes it into the turn's next
// model request, or, too late for that, answers it in a turn of its own
// with a result line of its own; the run ends at the last result line,
// told apart by the CLI's replay of each message it takes in
// (--replay-user-messages). A run that cannot take the message refuses it
// with ErrNotSteerable.
//
// Skills: with Config.SkillsDir set, before each run every folder
// SkillsDir/<name> is symlinked as <workdir>/.claude/skills/<name> (Claude
// Code) or <workdir>/.cursor/skills/<name> (Cursor); other symlinks there
// are removed, real files and folders are never touched. Claude Code also
// gets a generated <workdir>/CLAUDE.md listing the skills (name and
// description from SKILL.md's front matter) whose first line is a marker
// comment; a CLAUDE.md without the marker is the user's own and stays as
// it is. Runs injecting into one workdir at once are safe.
//
// Attached files (Turn.Files) are named to the agent by a last line
// appended to the prompt: "Attached files: /abs/a.png, /abs/b.txt". A
// prompt that starts with "-" gets a leading space so that the CLI does not
// take it for a flag, and a NUL in it, which no process argument can carry,
// becomes U+FFFD.
package engine

import (
	"context"
	"errors"
	"log/slog"

	"github.com/golem-chat/golem/sandbox"
)

// ErrNotInstalled is wrapped by Lookup and Run when an engine's CLI cannot
// be found; the error's text says how to install it.
var ErrNotInstalled = errors.New("agent CLI not installed")

// Config holds the settings every engine has; the zero value runs the CLI
// found on PATH (or in ~/.local/bin) with the environment inherited. The
// yaml keys are those of an engines.<name> section of bot.yaml.
type Config struct {
	// Command is the CLI to run: a path, or a name looked up in PATH and
	// then ~/.local/bin. Empty means the engine's Spec.DefaultCommand.
	Command string `yaml:"command"`
	// Model is the model of turns whose Turn.Model is empty; empty means
	// the CLI's default.
	Model string `yaml:"model"`
	// APIKey is the key used when Turn.APIKey is empty. With no key at all
	// the child inherits the environment as it is.
	APIKey string `yaml:"api_key"`
	// Env holds extra variables for the child's environment, on top of
	// what it is given of golem's own (see PassEnv).
	Env map[string]string `yaml:"env"`
	// PassEnv names variables of golem's environment the child is given
	// besides the allowlist: the session's basics (PATH, HOME, USER,
	// LOGNAME, SHELL, LANG, LC_*, TZ, TERM, TMPDIR, ...), proxies, and the
	// CLI's own key and settings (Spec.Env). Nothing else of golem's
	// environment reaches the agent.
	PassEnv []string `yaml:"pass_env"`
	// Withhold names variables of golem's environment that never reach
	// the child, whatever the allowlist says: those golem's configuration
	// read (a ${VAR} of bot.yaml outside the engines' sections).
	Withhold []string `yaml:"-"`
	// Args are extra arguments appended after the engine's own.
	Args []string `yaml:"args"`
	// SkillsDir holds one folder per skill (SKILL.md inside); they are
	// linked into the workdir before each run. Empty: no skill injection.
	SkillsDir string `yaml:"-"`
	// Logger receives structured logs; nil means slog.Default().
	Logger *slog.Logger `yaml:"-"`
}

// Base returns c itself, so that a Settings type that embeds Config has
// its Base method.
func (c *Config) Base() *Config { return c }

// Turn is one prompt for an agent.
type Turn struct {
	Prompt    string
	SessionID string   // resume this session; empty starts a new one
	Model     string   // empty: Config.Model, else the CLI's default
	Workdir   string   // the agent's working directory; must exist
	APIKey    string   // empty: the environment is inherited as it is
	Files     []string // absolute paths of files the user attached (already in Workdir's inbox)
	// Mode is how much the agent may do without asking; the zero value is
	// ModeAsk. Run refuses a mode the engine cannot honour (ErrMode).
	Mode Mode
	// OnStart, when set, is called with the agent's process group each time
	// a CLI process of the run has started (twice when the resume fallback
	// starts a second one), before any of its events, on the goroutine that
	// started it; a second call replaces the first group, which has ended.
	// Keep it short: the run's output waits for it. Callers record the
	// group so that a later golem can StopLeftover it.
	OnStart func(Group)
	// Sandbox, when set, is the sandbox the CLI runs in (bubblewrap, see
	// package sandbox); nil runs it as it is. A sandbox that cannot be
	// made fails Run; one whose bwrap fails ends the run with an error
	// saying so.
	Sandbox *sandbox.Turn
}

// Engine starts runs of one agent CLI. Implementations are safe for
// concurrent use: each Run is its own process.
type Engine interface {
	// Name is the engine's config name, its Spec.Name.
	Name() string
	// Run starts the CLI for t. A returned error means nothing was started
	// (e.g. ErrNotInstalled); otherwise the Run's events end with exactly one
	// terminal event, whatever the process does, and Run.Exited is closed
	// once the process is gone. Cancelling ctx kills the
	// whole process group and ends the run with the error "stopped"
	// (parser.Stopped); a deadline on ctx ends it with "timed out"
	// (parser.TimedOut).
	Run(ctx context.Context, t Turn) (*Run, error)
	// Lookup returns the path of the CLI that Run would start, or an error
	// wrapping ErrNotInstalled that says how to install it. Run looks the
	// CLI up each time, so one installed later works without a restart.
	Lookup() (string, error)
}
