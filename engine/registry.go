package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/golem-chat/golem/parser"
)

// registry lists every engine golem can run, the default one first. It is
// the only place that knows which engines exist: `bot events`, config
// validation, the engines: section of bot.yaml and the chat's /engine and
// /help all read it. To add an engine, write its file (its Spec, its
// Settings type and its Engine) and add its Spec here.
var registry = []Spec{
	claudeCodeSpec,
	cursorSpec,
	codexSpec,
	geminiSpec,
	openCodeSpec,
}

// Spec describes one engine: what golem needs to know of a CLI before it
// runs it.
type Spec struct {
	// Name is the engine's config name ("claude-code"): the key under
	// engines: in bot.yaml, the value of engine: and of /engine NAME.
	Name string
	// DefaultCommand is the CLI run when the config names none ("claude").
	DefaultCommand string
	// InstallHint says how to install the CLI; it ends the error of Lookup
	// and Run when the CLI is not found.
	InstallHint string
	// Capabilities says what the CLI can do beyond a plain turn.
	Capabilities Capabilities
	// Credentials says where the CLI finds its API key or login, for
	// `bot doctor` (see Checkup); the zero value is a CLI golem cannot tell.
	Credentials Credentials
	// Env are the variables of golem's environment the CLI reads its key
	// and settings from, given to it besides the common allowlist: names,
	// or prefixes ending in * ("ANTHROPIC_*").
	Env []string
	// Sandbox says what golem's sandbox must leave the CLI: its state
	// folders and its model API.
	Sandbox SandboxNeeds
	// NewParser returns a fresh parser for one run's stdout.
	NewParser func() parser.Parser
	// NewSettings returns the engine's section of bot.yaml
	// (engines.<name>) holding its defaults, ready to decode into.
	NewSettings func() Settings
}

// Capabilities are what an engine's CLI can do beyond a plain turn. The
// zero value is a CLI that runs a prompt to the end with full permissions.
type Capabilities struct {
	// Approvals: the CLI asks before it writes or runs, and waits for
	// Run.Respond.
	Approvals bool
	// Steering: the CLI takes more user messages while a turn runs.
	Steering bool
	// PermissionModes are the permissions.mode values the CLI supports
	// besides running with full permissions.
	PermissionModes []string
}

// Settings is one engine's section of bot.yaml (engines.<name>): a pointer
// to a struct with yaml tags that embeds Config inline (which gives it
// Base) and holds the engine's own keys, if any (Claude Code's
// partial_messages).
type Settings interface {
	// Base returns the settings every engine has, for the caller to read
	// (Model) and to fill in what does not come from the section
	// (SkillsDir, Logger) before calling Engine.
	Base() *Config
	// Engine returns a new engine configured by these settings.
	Engine() Engine
}

// Engines returns the specs of every engine, the default one first. The
// slice is the caller's.
func Engines() []Spec {
	return append([]Spec(nil), registry...)
}

// Names returns every engine's config name, the default one first.
func Names() []string {
	names := make([]string, len(registry))
	for i, s := range registry {
		names[i] = s.Name
	}
	return names
}

// Default returns the spec of the engine a configuration without engine:
// runs.
func Default() Spec { return registry[0] }

// Find returns the spec of the engine named name.
func Find(name string) (Spec, bool) {
	for _, s := range registry {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// ErrUnknown is wrapped by New and NewParser for a name no engine has.
var ErrUnknown = errors.New("unknown engine")

// NamesText lists the engines' names for a message: "a, b or c".
func NamesText() string {
	names := Names()
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// New returns the engine named name with the settings every engine has
// set to cfg and its own settings at their defaults.
func New(name string, cfg Config) (Engine, error) {
	s, ok := Find(name)
	if !ok {
		return nil, unknown(name)
	}
	set := s.NewSettings()
	*set.Base() = cfg
	return set.Engine(), nil
}

// NewParser returns a fresh parser for one run of the engine named name.
func NewParser(name string) (parser.Parser, error) {
	s, ok := Find(name)
	if !ok {
		return nil, unknown(name)
	}
	return s.NewParser(), nil
}

func unknown(name string) error {
	return fmt.Errorf("engine: %w %q (want %s)", ErrUnknown, name, NamesText())
}
