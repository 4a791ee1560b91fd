package engine

import (
	"context"
	"strconv"

	"github.com/golem-chat/golem/parser"
)

var codexSpec = Spec{
	Name:           "codex",
	DefaultCommand: "codex",
	InstallHint:    "install Codex with `npm install -g @openai/codex`, or set the engine's command to the path of `codex`",
	// plan is --sandbox read-only; bypass is
	// --dangerously-bypass-approvals-and-sandbox. accept-edits is not
	// honoured: --sandbox workspace-write also runs every command (sandboxed)
	// without asking, looser than "the rest is asked"; and codex exec cannot
	// ask at all (untrusted / on-request need the TUI or the app-server
	// protocol), so ask is out of reach.
	Capabilities: Capabilities{PermissionModes: []string{string(ModePlan)}},
	NewParser:    parser.NewCodex,
	Env:          []string{"OPENAI_*", "CODEX_*"},
	Sandbox: SandboxNeeds{Private: codexPrivate, BaseURLEnv: []string{"OPENAI_BASE_URL"},
		APIHosts: []string{"api.openai.com:443", "chatgpt.com:443", "auth.openai.com:443"}},
	NewSettings: func() Settings { return &CodexSettings{} },
	Credentials: Credentials{
		KeyEnv: []string{"OPENAI_API_KEY", "CODEX_API_KEY"},
		// `codex login` writes auth.json in CODEX_HOME (default ~/.codex).
		LoginFiles: inHome("CODEX_HOME", ".codex", "auth.json"),
		Login:      "run `codex login`",
	},
}

// CodexSettings is engines.codex in bot.yaml. env.OPENAI_BASE_URL points
// Codex at another Responses API (see Codex).
type CodexSettings struct {
	Config `yaml:",inline"`
}

// Base implements Settings.
func (s *CodexSettings) Base() *Config { return &s.Config }

// Engine implements Settings.
func (s *CodexSettings) Engine() Engine { return NewCodex(s.Config) }

// codexProvider is the name of the model provider golem defines on Codex's
// command line when a base URL is configured.
const codexProvider = "golem"

// Codex runs OpenAI's Codex CLI:
//
//	codex exec --json --skip-git-repo-check (--dangerously-bypass-approvals-and-sandbox | --sandbox read-only)
//	      [-m M] [-c model_provider=golem -c model_providers.golem={...}] [Config.Args...]
//	      [resume ID] PROMPT
//
// PROMPT is "-" (read from stdin) when it is too long for an argument.
// With a key, OPENAI_API_KEY and CODEX_API_KEY are set to it.
//
// Codex does not read OPENAI_BASE_URL: it takes its provider and base URL
// from $CODEX_HOME/config.toml (~/.codex). When Config.Env sets
// OPENAI_BASE_URL, the engine defines a provider "golem" with that base URL
// (the Responses API, the key from OPENAI_API_KEY) by -c overrides on the
// command line, so the user's own config.toml is neither needed nor
// touched; CODEX_HOME in Config.Env chooses where Codex keeps its sessions
// and auth.
//
// Resume: an unknown thread id makes Codex exit 1 with "thread/resume
// failed: no rollout found for thread id ..." on stderr and nothing on
// stdout, which the process layer's resume fallback recognizes; an unknown
// thread name silently starts a new thread, which the parser reports as a
// session reset (see parser.NewCodexResume). Either way the session golem
// stores next is the thread id of the run's thread.started.
//
// Skills are linked into <workdir>/.agents/skills/, which Codex discovers
// itself, and listed in a generated <workdir>/AGENTS.md (never the user's
// own). It is safe for concurrent use.
type Codex struct{ cli *cli }

var _ Engine = (*Codex)(nil)

// NewCodex returns the "codex" engine.
func NewCodex(cfg Config) *Codex {
	return &Codex{cli: newCLI(cli{
		name:           codexSpec.Name,
		defaultCommand: codexSpec.DefaultCommand,
		installHint:    codexSpec.InstallHint,
		skillsSubdir:   ".agents/skills",
		contextFile:    "AGENTS.md",
		promptOnStdin:  true,
		cfg:            cfg,
		newParser:      codexSpec.NewParser,
		resumeParser:   parser.NewCodexResume,
		keyEnv: func(key string) []string {
			return []string{"OPENAI_API_KEY=" + key, "CODEX_API_KEY=" + key}
		},
		args: func(t Turn, prompt string) []string {
			args := []string{"exec", "--json", "--skip-git-repo-check"}
			switch t.Mode { // Run has refused the modes it cannot honour
			case ModePlan:
				args = append(args, "--sandbox", "read-only")
			default:
				args = append(args, "--dangerously-bypass-approvals-and-sandbox")
			}
			if t.Model != "" {
				args = append(args, "-m", t.Model)
			}
			if base := cfg.Env["OPENAI_BASE_URL"]; base != "" {
				args = append(args, "-c", "model_provider="+codexProvider,
					"-c", "model_providers."+codexProvider+"={name="+strconv.Quote(codexProvider)+
						",base_url="+strconv.Quote(base)+`,wire_api="responses",env_key="OPENAI_API_KEY"}`)
			}
			args = append(args, cfg.Args...)
			if t.SessionID != "" {
				args = append(args, "resume", t.SessionID)
			}
			if prompt == "" {
				prompt = "-" // it comes on stdin
			}
			return append(args, prompt)
		},
	})}
}

// Name implements Engine.
func (e *Codex) Name() string { return codexSpec.Name }

// Lookup implements Engine.
func (e *Codex) Lookup() (string, error) { return e.cli.lookup() }

// Run implements Engine.
func (e *Codex) Run(ctx context.Context, t Turn) (*Run, error) { return e.cli.run(ctx, t) }
