package engine

import (
	"context"

	"github.com/golem-chat/golem/parser"
)

var cursorSpec = Spec{
	Name:           "cursor",
	DefaultCommand: "agent",
	InstallHint:    "install Cursor's CLI with `curl https://cursor.com/install -fsS | bash` (it puts `agent` in ~/.local/bin), or set the engine's command to the path of `agent`",
	NewParser:      parser.NewCursor,
	Env:            []string{"CURSOR_*"},
	Sandbox:        SandboxNeeds{State: homeDirs(".cursor", ".config/cursor"), APIHosts: []string{"api2.cursor.sh:443", "api.cursor.com:443"}},
	NewSettings:    func() Settings { return &CursorSettings{} },
	Credentials: Credentials{
		KeyEnv: []string{"CURSOR_API_KEY"},
		// `agent login` keeps its tokens in ~/.config/cursor/auth.json on
		// Linux (the keychain on macOS, which golem cannot see).
		LoginFiles: inHome("", ".config/cursor", "auth.json"),
		Login:      "run `agent login`",
	},
}

// CursorSettings is engines.cursor in bot.yaml.
type CursorSettings struct {
	Config `yaml:",inline"`
}

// Engine implements Settings.
func (s *CursorSettings) Engine() Engine { return NewCursor(s.Config) }

// Cursor runs Cursor's agent CLI:
//
//	agent -p PROMPT --output-format stream-json --stream-partial-output --force --trust
//	      --sandbox disabled --approve-mcps [--resume ID] [--model M] [Config.Args...]
//
// with CURSOR_API_KEY set to the key when there is one. The key goes only
// in the child's environment, never on its command line (--api-key), which
// every local user can read in the process list. Skills are linked into
// <workdir>/.cursor/skills/. It is safe for concurrent use.
type Cursor struct{ cli *cli }

var _ Engine = (*Cursor)(nil)

// NewCursor returns the "cursor" engine.
func NewCursor(cfg Config) *Cursor {
	return &Cursor{cli: newCLI(cli{
		name:           cursorSpec.Name,
		defaultCommand: cursorSpec.DefaultCommand,
		installHint:    cursorSpec.InstallHint,
		skillsSubdir:   ".cursor/skills",
		cfg:            cfg,
		newParser:      cursorSpec.NewParser,
		keyEnv:         func(key string) []string { return []string{"CURSOR_API_KEY=" + key} },
		args: func(t Turn, prompt string) []string {
			args := []string{"-p", prompt, "--output-format", "stream-json", "--stream-partial-output",
				"--force", "--trust", "--sandbox", "disabled", "--approve-mcps"}
			if t.SessionID != "" {
				args = append(args, "--resume", t.SessionID)
			}
			if t.Model != "" {
				args = append(args, "--model", t.Model)
			}
			return append(args, cfg.Args...)
		},
	})}
}

// Name implements Engine.
func (e *Cursor) Name() string { return cursorSpec.Name }

// Lookup implements Engine.
func (e *Cursor) Lookup() (string, error) { return e.cli.lookup() }

// Run implements Engine.
func (e *Cursor) Run(ctx context.Context, t Turn) (*Run, error) { return e.cli.run(ctx, t) }
