package engine

import (
	"context"

	"github.com/golem-chat/golem/parser"
)

// ClaudeCode runs Anthropic's Claude Code CLI:
//
//	claude -p PROMPT --output-format stream-json --verbose --dangerously-skip-permissions
//	       [--include-partial-messages] [--resume ID] [--model M] [Config.Args...]
//
// with ANTHROPIC_API_KEY set to the turn's key when there is one. Skills
// are linked into <workdir>/.claude/skills/ and listed in a generated
// <workdir>/CLAUDE.md. It is safe for concurrent use.
type ClaudeCode struct{ cli *cli }

var _ Engine = (*ClaudeCode)(nil)

// NewClaudeCode returns the "claude-code" engine.
func NewClaudeCode(cfg Config) *ClaudeCode {
	return &ClaudeCode{cli: newCLI(cli{
		name:           parser.EngineClaudeCode,
		defaultCommand: "claude",
		installHint:    "install Claude Code with `npm install -g @anthropic-ai/claude-code`, or set the engine's command to the path of `claude`",
		skillsSubdir:   ".claude/skills",
		claudeMD:       true,
		promptOnStdin:  true,
		cfg:            cfg,
		newParser:      parser.NewClaudeCode,
		keyEnv:         func(key string) []string { return []string{"ANTHROPIC_API_KEY=" + key} },
		args: func(t Turn, prompt, _ string) []string {
			args := []string{"-p"}
			if prompt != "" { // else it comes on stdin
				args = append(args, prompt)
			}
			args = append(args, "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions")
			if !cfg.NoPartialMessages {
				args = append(args, "--include-partial-messages")
			}
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
func (e *ClaudeCode) Name() string { return parser.EngineClaudeCode }

// Lookup implements Engine.
func (e *ClaudeCode) Lookup() (string, error) { return e.cli.lookup() }

// Run implements Engine.
func (e *ClaudeCode) Run(ctx context.Context, t Turn) (*Run, error) { return e.cli.run(ctx, t) }
