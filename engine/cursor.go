package engine

import (
	"context"

	"github.com/golem-chat/golem/parser"
)

// Cursor runs Cursor's agent CLI:
//
//	agent -p PROMPT --output-format stream-json --stream-partial-output --force --trust
//	      --sandbox disabled --approve-mcps [--resume ID] [--model M] [--api-key K] [Config.Args...]
//
// with CURSOR_API_KEY also set to the key when there is one. Skills are
// linked into <workdir>/.cursor/skills/. It is safe for concurrent use.
type Cursor struct{ cli *cli }

var _ Engine = (*Cursor)(nil)

// NewCursor returns the "cursor" engine.
func NewCursor(cfg Config) *Cursor {
	return &Cursor{cli: newCLI(cli{
		name:           parser.EngineCursor,
		defaultCommand: "agent",
		installHint:    "install Cursor's CLI with `curl https://cursor.com/install -fsS | bash` (it puts `agent` in ~/.local/bin), or set the engine's command to the path of `agent`",
		skillsSubdir:   ".cursor/skills",
		cfg:            cfg,
		newParser:      parser.NewCursor,
		keyEnv:         func(key string) []string { return []string{"CURSOR_API_KEY=" + key} },
		args: func(t Turn, prompt, key string) []string {
			args := []string{"-p", prompt, "--output-format", "stream-json", "--stream-partial-output",
				"--force", "--trust", "--sandbox", "disabled", "--approve-mcps"}
			if t.SessionID != "" {
				args = append(args, "--resume", t.SessionID)
			}
			if t.Model != "" {
				args = append(args, "--model", t.Model)
			}
			if key != "" {
				args = append(args, "--api-key", key)
			}
			return append(args, cfg.Args...)
		},
	})}
}

// Name implements Engine.
func (e *Cursor) Name() string { return parser.EngineCursor }

// Lookup implements Engine.
func (e *Cursor) Lookup() (string, error) { return e.cli.lookup() }

// Run implements Engine.
func (e *Cursor) Run(ctx context.Context, t Turn) (*Run, error) { return e.cli.run(ctx, t) }
