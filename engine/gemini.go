package engine

import (
	"context"

	"github.com/golem-chat/golem/parser"
)

var geminiSpec = Spec{
	Name:           "gemini",
	DefaultCommand: "gemini",
	InstallHint:    "install the Gemini CLI with `npm install -g @google/gemini-cli`, or set the engine's command to the path of `gemini`",
	// plan is --approval-mode plan (read-only), accept-edits is auto_edit:
	// edits run, and what the CLI would ask about is refused, as headless
	// it cannot ask (which also puts ask out of reach); bypass is --yolo.
	Capabilities: Capabilities{PermissionModes: []string{string(ModeAcceptEdits), string(ModePlan)}},
	NewParser:    parser.NewGemini,
	Env:          []string{"GEMINI_*", "GOOGLE_GEMINI_*", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_GENAI_USE_VERTEXAI"},
	Sandbox: SandboxNeeds{Private: geminiPrivate, BaseURLEnv: []string{"GOOGLE_GEMINI_BASE_URL"},
		APIHosts: []string{"generativelanguage.googleapis.com:443", "cloudcode-pa.googleapis.com:443", "oauth2.googleapis.com:443"}},
	NewSettings: func() Settings { return &GeminiSettings{} },
	Credentials: Credentials{
		KeyEnv: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"},
		// A Google login in the CLI is kept in ~/.gemini/oauth_creds.json.
		LoginFiles: inHome("", ".gemini", "oauth_creds.json"),
		Login:      "run `gemini` once and log in with Google",
	},
}

// GeminiSettings is engines.gemini in bot.yaml.
type GeminiSettings struct {
	Config `yaml:",inline"`
}

// Base implements Settings.
func (s *GeminiSettings) Base() *Config { return &s.Config }

// Engine implements Settings.
func (s *GeminiSettings) Engine() Engine { return NewGemini(s.Config) }

// Gemini runs Google's Gemini CLI:
//
//	gemini -p PROMPT --output-format stream-json (--yolo | --approval-mode auto_edit|plan) --skip-trust
//	       [--resume ID] [-m M] [Config.Args...]
//
// with GEMINI_API_KEY set to the key when there is one. A prompt too long
// for an argument goes on stdin (the CLI appends -p's text to its stdin).
//
// The CLI takes its base URL from GOOGLE_GEMINI_BASE_URL (Config.Env), but
// with that variable set it no longer infers API-key auth from
// GEMINI_API_KEY ("Invalid auth method selected."): the user's
// ~/.gemini/settings.json must then say
// {"security":{"auth":{"selectedType":"gemini-api-key"}}}.
//
// Resume: an unknown session id makes the CLI exit 42 with "Error resuming
// session: Invalid session identifier ..." on stderr and nothing on stdout,
// which the process layer's resume fallback recognizes.
//
// While the model API answers 429 or 503 the CLI retries with backoff for
// minutes and prints nothing on stdout (only "Attempt N failed with status
// 429. Retrying with backoff..." on stderr): the user sees no new event
// until the turn's timeout ends the run.
//
// Skills are linked into <workdir>/.agents/skills/, which the CLI discovers
// itself (as it does .gemini/skills/), and listed in a generated
// <workdir>/GEMINI.md (never the user's own). It is safe for concurrent use.
type Gemini struct{ cli *cli }

var _ Engine = (*Gemini)(nil)

// NewGemini returns the "gemini" engine.
func NewGemini(cfg Config) *Gemini {
	return &Gemini{cli: newCLI(cli{
		name:           geminiSpec.Name,
		defaultCommand: geminiSpec.DefaultCommand,
		installHint:    geminiSpec.InstallHint,
		skillsSubdir:   ".agents/skills",
		contextFile:    "GEMINI.md",
		promptOnStdin:  true,
		cfg:            cfg,
		newParser:      geminiSpec.NewParser,
		keyEnv:         func(key string) []string { return []string{"GEMINI_API_KEY=" + key} },
		args: func(t Turn, prompt string) []string {
			// With the prompt on stdin, -p " " only adds a space to it.
			if prompt == "" {
				prompt = " "
			}
			args := []string{"-p", prompt, "--output-format", "stream-json"}
			switch t.Mode { // Run has refused the modes it cannot honour
			case ModeAcceptEdits:
				args = append(args, "--approval-mode", "auto_edit")
			case ModePlan:
				args = append(args, "--approval-mode", "plan")
			default:
				args = append(args, "--yolo")
			}
			args = append(args, "--skip-trust")
			if t.SessionID != "" {
				args = append(args, "--resume", t.SessionID)
			}
			if t.Model != "" {
				args = append(args, "-m", t.Model)
			}
			return append(args, cfg.Args...)
		},
	})}
}

// Name implements Engine.
func (e *Gemini) Name() string { return geminiSpec.Name }

// Lookup implements Engine.
func (e *Gemini) Lookup() (string, error) { return e.cli.lookup() }

// Run implements Engine.
func (e *Gemini) Run(ctx context.Context, t Turn) (*Run, error) { return e.cli.run(ctx, t) }
