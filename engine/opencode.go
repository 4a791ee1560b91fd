package engine

import (
	"context"

	"github.com/golem-chat/golem/parser"
)

var openCodeSpec = Spec{
	Name:           "opencode",
	DefaultCommand: "opencode",
	InstallHint:    "install OpenCode with `npm install -g opencode-ai`, or set the engine's command to the path of `opencode`",
	// Only bypass for now (--auto). What the CLI offers: its permission
	// config (permission.edit / permission.bash: allow, ask, deny; the plan
	// agent) could express accept-edits and plan; `opencode run` cannot ask.
	NewParser: parser.NewOpenCode,
	// Its own settings and the providers' keys it reads most often.
	Env: []string{"OPENCODE_*", "ANTHROPIC_*", "OPENAI_*"},
	Sandbox: SandboxNeeds{State: openCodeState, Private: openCodePrivate, BaseURLEnv: []string{"ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"},
		APIHosts: []string{"api.anthropic.com:443", "api.openai.com:443"}},
	NewSettings: func() Settings { return &OpenCodeSettings{} },
	Credentials: Credentials{
		KeyEnv: []string{"ANTHROPIC_API_KEY"},
		// `opencode auth login` keeps provider keys in its data folder.
		LoginFiles: inHome("XDG_DATA_HOME", ".local/share", "opencode/auth.json"),
		Login:      "run `opencode auth login`, or configure a provider in opencode.json",
	},
}

// OpenCodeSettings is engines.opencode in bot.yaml.
type OpenCodeSettings struct {
	Config `yaml:",inline"`
}

// Base implements Settings.
func (s *OpenCodeSettings) Base() *Config { return &s.Config }

// Engine implements Settings.
func (s *OpenCodeSettings) Engine() Engine { return NewOpenCode(s.Config) }

// OpenCode runs the OpenCode CLI:
//
//	opencode run --format json --auto --dir WORKDIR [--session ID] [-m PROVIDER/MODEL] [Config.Args...]
//
// with the prompt on stdin (as an argument, one with spaces reaches the
// model in quotes) and ANTHROPIC_API_KEY set to the key when there is one
// (keys of other providers go in Config.Env). Providers, their base URLs and the
// default model come from OpenCode's own config (opencode.json, or
// OPENCODE_CONFIG_CONTENT in Config.Env).
//
// OpenCode prints no result line: the run is done when its last
// step_finish says "stop" and the process exits 0 (parser.OpenCode's End).
// Resume: an unknown session makes it exit 1 with "Error: Session not
// found" on stderr and nothing on stdout, which the process layer's resume
// fallback recognizes. It retries 429 and 5xx answers of its model API
// without end and without printing anything: the turn's timeout applies.
//
// Skills are linked into <workdir>/.agents/skills/, which OpenCode
// discovers itself, and listed in a generated <workdir>/AGENTS.md (never
// the user's own). It is safe for concurrent use.
type OpenCode struct{ cli *cli }

var _ Engine = (*OpenCode)(nil)

// NewOpenCode returns the "opencode" engine.
func NewOpenCode(cfg Config) *OpenCode {
	return &OpenCode{cli: newCLI(cli{
		name:           openCodeSpec.Name,
		defaultCommand: openCodeSpec.DefaultCommand,
		installHint:    openCodeSpec.InstallHint,
		skillsSubdir:   ".agents/skills",
		contextFile:    "AGENTS.md",
		promptOnStdin:  true,
		stdinPrompt:    true, // as an argument, a prompt with spaces reaches the model in quotes
		cfg:            cfg,
		newParser:      openCodeSpec.NewParser,
		keyEnv:         func(key string) []string { return []string{"ANTHROPIC_API_KEY=" + key} },
		args: func(t Turn, prompt string) []string {
			// It takes its directory from $PWD, not from its working
			// directory, unless --dir says.
			args := []string{"run", "--format", "json", "--auto", "--dir", t.Workdir}
			if t.SessionID != "" {
				args = append(args, "--session", t.SessionID)
			}
			if t.Model != "" {
				args = append(args, "-m", t.Model)
			}
			return append(args, cfg.Args...) // the prompt comes on stdin
		},
	})}
}

// Name implements Engine.
func (e *OpenCode) Name() string { return openCodeSpec.Name }

// Lookup implements Engine.
func (e *OpenCode) Lookup() (string, error) { return e.cli.lookup() }

// Run implements Engine.
func (e *OpenCode) Run(ctx context.Context, t Turn) (*Run, error) { return e.cli.run(ctx, t) }
