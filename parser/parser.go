package parser

import "fmt"

// Engine names accepted by New; they are the engines' config names.
const (
	EngineClaudeCode = "claude-code"
	EngineCursor     = "cursor"
)

// New returns a fresh Parser for one run of the named engine: "claude-code"
// or "cursor".
func New(engine string) (Parser, error) {
	switch engine {
	case EngineClaudeCode:
		return NewClaudeCode(), nil
	case EngineCursor:
		return NewCursor(), nil
	}
	return nil, fmt.Errorf("parser: unknown engine %q (want %q or %q)", engine, EngineClaudeCode, EngineCursor)
}
