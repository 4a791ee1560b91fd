package parser

// ClaudeCode parses the stream-json output of Claude Code's `claude -p
// --output-format stream-json --verbose [--include-partial-messages]`.
type ClaudeCode struct {
	sessionID string
}

// NewClaudeCode returns a parser for one Claude Code run.
func NewClaudeCode() Parser { return &ClaudeCode{} }

// Parse implements Parser.
func (p *ClaudeCode) Parse(line []byte) []Event { return nil }
