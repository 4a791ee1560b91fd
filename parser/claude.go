package parser

import (
	"strings"
)

// ClaudeCode parses the stream-json output of Claude Code's
// `claude -p --output-format stream-json --verbose [--include-partial-messages]`.
//
// Line types and what they become:
//
//   - system (init, api_retry, status, thinking_tokens, ...): never terminal
//     and no events; init's session_id is remembered for a result that
//     lacks one.
//   - stream_event (--include-partial-messages): text deltas of the raw API
//     stream become Text at once; everything else in them is ignored.
//   - assistant: one content block per line in practice, several handled.
//     text blocks become Text, except text already delivered by stream_event
//     deltas of the same message block; tool_use blocks become ToolCall;
//     thinking blocks are not answer text and are dropped.
//   - user: tool_result blocks become ToolResult (content a string, or an
//     array whose text blocks are joined with "\n").
//   - result: is_error true becomes Error (message: the result text, else
//     errors[] joined with "; "), whatever the subtype says; otherwise Done.
//
// An assistant line with a top-level "error" (Claude Code's synthetic
// "API Error: ..." message) is not answer text either: the is_error result
// that follows carries the same message as the run's Error.
//
// Text and tool activity of subagents (lines whose parent_tool_use_id is
// set) is not the answer: their text is dropped, their tool calls and
// results are kept.
type ClaudeCode struct {
	sessionID string // from system/init, for a result without one

	// The message whose stream_event deltas are being received, and per
	// content block index the text streamed so far. An assistant line of
	// the same message emits only what its deltas did not already deliver.
	streamMsg    string
	streamBlocks []streamBlock
	textBlocks   int // text blocks of streamMsg seen in assistant lines
}

type streamBlock struct {
	text     bool   // the block is a text block
	streamed []byte // text delivered from its deltas
}

// anyMessage stands for a streamed message whose id is unknown; assistant
// lines of any id then match it.
const anyMessage = "\x00any"

// maxStreamBlocks bounds the per-message block table against hostile
// indexes; real messages have a handful of blocks.
const maxStreamBlocks = 1024

// NewClaudeCode returns a parser for one Claude Code run.
func NewClaudeCode() Parser { return &ClaudeCode{} }

// claudeLine holds the top-level fields of one line that the parser reads.
// The byte slices alias the line.
type claudeLine struct {
	typ, subtype   []byte
	message, event []byte // raw objects
	sessionID      string
	subagent       bool // parent_tool_use_id is a non-empty string
	isError        bool
	result         string
	errors         []byte // raw array
	durationMS     []byte // raw numbers
	cost, numTurns []byte
	errorText      string
}

// Parse implements Parser. The returned slice is the caller's.
func (p *ClaudeCode) Parse(line []byte) []Event {
	line, ok := jsonLine(line)
	if !ok {
		return nil
	}
	var l claudeLine
	r := reader{b: line}
	first := true
	for r.object(&first) {
		k := r.key()
		switch string(k) {
		case "type":
			l.typ, _ = r.rawString()
		case "subtype":
			l.subtype, _ = r.rawString()
		case "message":
			l.message = r.raw()
		case "event":
			l.event = r.raw()
		case "session_id":
			l.sessionID, _ = r.str()
		case "parent_tool_use_id":
			s, _ := r.str()
			l.subagent = s != ""
		case "is_error":
			l.isError = r.boolean()
		case "result":
			l.result, _ = r.str()
		case "errors":
			l.errors = r.raw()
		case "duration_ms":
			l.durationMS = r.number()
		case "total_cost_usd":
			l.cost = r.number()
		case "num_turns":
			l.numTurns = r.number()
		case "error":
			l.errorText, _ = r.str()
		default:
			r.skip()
		}
	}
	if !r.end() {
		return nil
	}
	switch string(l.typ) {
	case "assistant":
		return p.assistant(&l)
	case "user":
		return p.user(&l)
	case "stream_event":
		return p.streamEvent(&l)
	case "result":
		return []Event{p.result(&l)}
	case "system":
		return p.system(&l)
	}
	return nil
}

func (p *ClaudeCode) system(l *claudeLine) []Event {
	if string(l.subtype) == "init" && l.sessionID != "" {
		p.sessionID = l.sessionID
	}
	return nil
}

func (p *ClaudeCode) result(l *claudeLine) Event {
	p.resetStream()
	if l.isError {
		msg := l.result
		if msg == "" {
			msg = joinStrings(l.errors, "; ")
		}
		if msg == "" {
			msg = "the agent reported an error"
			if len(l.subtype) > 0 {
				msg += " (" + string(l.subtype) + ")"
			}
		}
		return Event{Type: Error, Message: msg}
	}
	e := Event{Type: Done, SessionID: l.sessionID}
	if e.SessionID == "" {
		e.SessionID = p.sessionID
	}
	if n, ok := parseInt(l.durationMS); ok {
		e.DurationMS = &n
	}
	if f, ok := parseFloat(l.cost); ok {
		e.CostUSD = &f
	}
	if n, ok := parseInt(l.numTurns); ok && n == int64(int(n)) {
		t := int(n)
		e.NumTurns = &t
	}
	return e
}

// assistant turns the content blocks of an assistant message into events.
func (p *ClaudeCode) assistant(l *claudeLine) []Event {
	var id string
	var content []byte
	r := reader{b: l.message}
	first := true
	for r.object(&first) {
		switch string(r.key()) {
		case "id":
			id, _ = r.str()
		case "content":
			content = r.raw()
		default:
			r.skip()
		}
	}
	if r.bad || content == nil {
		return nil
	}
	streamed := p.streamMsg == anyMessage || p.streamMsg != "" && (id == "" || id == p.streamMsg)
	var events []Event
	r = reader{b: content}
	first = true
	for r.array(&first) {
		b := readBlock(&r)
		switch string(b.typ) {
		case "text":
			if l.subagent || l.errorText != "" {
				continue
			}
			text := b.text()
			if streamed {
				text = p.unstreamed(text)
			}
			if text != "" {
				events = append(events, Event{Type: Text, Content: text})
			}
		case "tool_use":
			id, _ := (&reader{b: b.id}).str()
			name, _ := (&reader{b: b.name}).str()
			events = append(events, Event{Type: ToolCall, ID: id, Name: name, Args: objectOrEmpty(b.input)})
		}
	}
	if r.bad {
		return nil
	}
	return events
}

// unstreamed returns the part of the next text block of the streamed
// message that its deltas have not delivered yet: all of it when no deltas
// were seen, the rest when they delivered a prefix, nothing when they
// delivered it all (or something else, which cannot be taken back).
func (p *ClaudeCode) unstreamed(text string) string {
	k := p.textBlocks
	p.textBlocks++
	for i := range p.streamBlocks {
		b := &p.streamBlocks[i]
		if !b.text {
			continue
		}
		if k > 0 {
			k--
			continue
		}
		if strings.HasPrefix(text, string(b.streamed)) {
			return text[len(b.streamed):]
		}
		return ""
	}
	return text
}

// block is one content block; fields are raw values aliasing the line.
type block struct {
	typ                []byte
	textRaw            []byte
	id, name, input    []byte
	toolUseID, content []byte
	isError            bool
}

func readBlock(r *reader) block {
	var b block
	first := true
	for r.object(&first) {
		switch string(r.key()) {
		case "type":
			b.typ, _ = r.rawString()
		case "text":
			b.textRaw = r.raw()
		case "id":
			b.id = r.raw()
		case "name":
			b.name = r.raw()
		case "input":
			b.input = r.raw()
		case "tool_use_id":
			b.toolUseID = r.raw()
		case "content":
			b.content = r.raw()
		case "is_error":
			b.isError = r.boolean()
		default:
			r.skip()
		}
	}
	return b
}

func (b *block) text() string {
	s, _ := (&reader{b: b.textRaw}).str()
	return s
}

// user turns the tool_result blocks of a user message into events.
func (p *ClaudeCode) user(l *claudeLine) []Event {
	var content []byte
	r := reader{b: l.message}
	first := true
	for r.object(&first) {
		if string(r.key()) == "content" {
			content = r.raw()
		} else {
			r.skip()
		}
	}
	if r.bad || len(content) == 0 || content[0] != '[' {
		return nil // a plain string is the prompt echoed back
	}
	var events []Event
	r = reader{b: content}
	first = true
	for r.array(&first) {
		b := readBlock(&r)
		if string(b.typ) != "tool_result" {
			continue
		}
		id, _ := (&reader{b: b.toolUseID}).str()
		events = append(events, Event{Type: ToolResult, ID: id, Content: resultContent(b.content), IsError: b.isError})
	}
	if r.bad {
		return nil
	}
	return events
}

// resultContent reads a tool_result's content: a string, or an array of
// blocks whose text blocks are joined with "\n" (images and other blocks
// are left out).
func resultContent(raw []byte) string {
	r := reader{b: raw}
	switch r.peek() {
	case '"':
		s, _ := r.str()
		return s
	case '[':
		var parts []string
		first := true
		for r.array(&first) {
			b := readBlock(&r)
			if string(b.typ) == "text" {
				parts = append(parts, b.text())
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

// streamEvent handles one raw API stream event from --include-partial-messages.
func (p *ClaudeCode) streamEvent(l *claudeLine) []Event {
	var typ, msgID, blockType, deltaType []byte
	var index int64 = -1
	var text string
	r := reader{b: l.event}
	first := true
	for r.object(&first) {
		switch string(r.key()) {
		case "type":
			typ, _ = r.rawString()
		case "index":
			if n, ok := parseInt(r.number()); ok {
				index = n
			}
		case "message":
			f := true
			for r.object(&f) {
				if string(r.key()) == "id" {
					msgID, _ = r.rawString()
				} else {
					r.skip()
				}
			}
		case "content_block":
			f := true
			for r.object(&f) {
				if string(r.key()) == "type" {
					blockType, _ = r.rawString()
				} else {
					r.skip()
				}
			}
		case "delta":
			f := true
			for r.object(&f) {
				switch string(r.key()) {
				case "type":
					deltaType, _ = r.rawString()
				case "text":
					text, _ = r.str()
				default:
					r.skip()
				}
			}
		default:
			r.skip()
		}
	}
	if r.bad || l.subagent {
		return nil
	}
	switch string(typ) {
	case "message_start":
		p.resetStream()
		p.streamMsg = string(msgID)
		if p.streamMsg == "" {
			p.streamMsg = anyMessage
		}
	case "content_block_start":
		if b := p.block(index); b != nil && string(blockType) == "text" {
			b.text = true
		}
	case "content_block_delta":
		if string(deltaType) != "text_delta" || text == "" {
			return nil
		}
		if p.streamMsg == "" {
			p.streamMsg = anyMessage // deltas without a message_start still count
		}
		if b := p.block(index); b != nil {
			b.text = true
			b.streamed = append(b.streamed, text...)
		}
		return []Event{{Type: Text, Content: text}}
	}
	return nil
}

// block returns the stream state of content block i of the current
// message, or nil when there is no message or i is out of range.
func (p *ClaudeCode) block(i int64) *streamBlock {
	if p.streamMsg == "" || i < 0 || i >= maxStreamBlocks {
		return nil
	}
	for int64(len(p.streamBlocks)) <= i {
		p.streamBlocks = append(p.streamBlocks, streamBlock{})
	}
	return &p.streamBlocks[i]
}

func (p *ClaudeCode) resetStream() {
	p.streamMsg = ""
	p.streamBlocks = p.streamBlocks[:0]
	p.textBlocks = 0
}
