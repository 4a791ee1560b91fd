package parser

// Cursor parses the stream-json output of Cursor's `agent
// --output-format stream-json --stream-partial-output`.
type Cursor struct {
	sessionID string
}

// NewCursor returns a parser for one Cursor agent run.
func NewCursor() Parser { return &Cursor{} }

// Parse implements Parser.
func (p *Cursor) Parse(line []byte) []Event { return nil }
