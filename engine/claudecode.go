package engine

import (
	"context"

	"github.com/golem-chat/golem/parser"
)

var claudeCodeSpec = Spec{
	Name:           "claude-code",
	DefaultCommand: "claude",
	InstallHint:    "install Claude Code with `npm install -g @anthropic-ai/claude-code`, or set the engine's command to the path of `claude`",
	Capabilities: Capabilities{Approvals: true, Steering: true,
		PermissionModes: []string{string(ModeAsk), string(ModeAcceptEdits), string(ModePlan)}},
	NewParser: parser.NewClaudeCode,
	// Its key, base URL and settings (CLAUDE_CODE_*, CLAUDE_CONFIG_DIR,
	// DISABLE_TELEMETRY, ...), and IS_SANDBOX, which lets root skip its
	// permission checks.
	Env: []string{"ANTHROPIC_*", "CLAUDE_*", "DISABLE_*", "IS_SANDBOX", "MAX_THINKING_TOKENS", "BASH_*_TIMEOUT_MS"},
	Sandbox: SandboxNeeds{Private: claudePrivate, BaseURLEnv: []string{"ANTHROPIC_BASE_URL"},
		APIHosts: []string{"api.anthropic.com:443", "console.anthropic.com:443"}},
	NewSettings: func() Settings { return &ClaudeCodeSettings{} },
	Credentials: Credentials{
		KeyEnv: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"},
		// On Linux `claude` keeps its login in .credentials.json in its
		// config folder (CLAUDE_CONFIG_DIR, default ~/.claude).
		LoginFiles: inHome("CLAUDE_CONFIG_DIR", ".claude", ".credentials.json"),
		Login:      "run `claude` once and log in with /login (or `claude setup-token`)",
	},
}

// ClaudeCodeSettings is engines.claude-code in bot.yaml.
type ClaudeCodeSettings struct {
	Config `yaml:",inline"`
	// PartialMessages streams text while a block is being written
	// (--include-partial-messages); nil means on.
	PartialMessages *bool `yaml:"partial_messages"`
}

// Engine implements Settings.
func (s *ClaudeCodeSettings) Engine() Engine { return s.ClaudeCode() }

// ClaudeCode returns the engine these settings configure.
func (s *ClaudeCodeSettings) ClaudeCode() *ClaudeCode {
	cfg := s.Config
	partial := s.PartialMessages == nil || *s.PartialMessages
	return &ClaudeCode{cli: newCLI(cli{
		name:           claudeCodeSpec.Name,
		defaultCommand: claudeCodeSpec.DefaultCommand,
		installHint:    claudeCodeSpec.InstallHint,
		skillsSubdir:   ".claude/skills",
		claudeMD:       true,
		interactive:    true,
		cfg:            cfg,
		newParser:      claudeCodeSpec.NewParser,
		keyEnv:         func(key string) []string { return []string{"ANTHROPIC_API_KEY=" + key} },
		args: func(t Turn, prompt string) []string {
			// The prompt comes on stdin as a user message, whatever its length.
			// --replay-user-messages: the CLI echoes each message when it
			// takes it in, which tells the run's last result line (see Run.Steer).
			args := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--replay-user-messages"}
			args = append(args, permissionArgs(t.Mode)...)
			if partial {
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

// permissionArgs are the flags of a permissions mode: bypass skips every
// check (as root the CLI then needs IS_SANDBOX=1 in its environment); the
// others name the CLI's own mode and have it ask on stdin
// (--permission-prompt-tool stdio).
func permissionArgs(m Mode) []string {
	switch m.orAsk() {
	case ModeBypass:
		return []string{"--dangerously-skip-permissions"}
	case ModeAcceptEdits:
		return []string{"--permission-mode", "acceptEdits", "--permission-prompt-tool", "stdio"}
	case ModePlan:
		return []string{"--permission-mode", "plan", "--permission-prompt-tool", "stdio"}
	default:
		return []string{"--permission-mode", "default", "--permission-prompt-tool", "stdio"}
	}
}

// ClaudeCode runs Anthropic's Claude Code CLI:
//
//	claude -p --input-format stream-json --output-format stream-json --verbose
//	       --replay-user-messages (--dangerously-skip-permissions | --permission-mode M --permission-prompt-tool stdio)
//	       [--include-partial-messages] [--resume ID] [--model M] [Config.Args...]
//
// with ANTHROPIC_API_KEY set to the turn's key when there is one. The
// prompt goes on stdin as a stream-json user message, and stdin stays open
// until the result line: a tool that needs permission arrives as a
// parser.PermissionRequest, and Run.Respond writes the answer there
// (ModeAsk maps to the CLI's default mode, ModeAcceptEdits to acceptEdits,
// ModePlan to plan). More user messages go the same way while the turn
// runs (Run.Steer). Skills
// are linked into <workdir>/.claude/skills/ and listed in a generated
// <workdir>/CLAUDE.md. It is safe for concurrent use.
type ClaudeCode struct{ cli *cli }

var _ Engine = (*ClaudeCode)(nil)

// NewClaudeCode returns the "claude-code" engine with its own settings at
// their defaults (partial messages on).
func NewClaudeCode(cfg Config) *ClaudeCode {
	return (&ClaudeCodeSettings{Config: cfg}).ClaudeCode()
}

// Name implements Engine.
func (e *ClaudeCode) Name() string { return claudeCodeSpec.Name }

// Lookup implements Engine.
func (e *ClaudeCode) Lookup() (string, error) { return e.cli.lookup() }

// Run implements Engine.
func (e *ClaudeCode) Run(ctx context.Context, t Turn) (*Run, error) { return e.cli.run(ctx, t) }
