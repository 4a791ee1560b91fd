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
//     array whose text blocks are joined with "\n"); a user message
//     replayed from stdin ("isReplay": true, --replay-user-messages) becomes
//     UserMessage: the CLI took it into a turn.
//   - result: is_error true becomes Error (message: the result text, else
//     errors[] joined with "; "), whatever the subtype says; otherwise Done.
//   - control_request with subtype can_use_tool (--permission-prompt-tool
//     stdio: the CLI asks before it runs a tool and waits for the answer on
//     stdin) becomes PermissionRequest: ID the request_id, Name the tool,
//     Args its input, Permission the permission_suggestions (Suggestions)
//     and an AskUserQuestion's questions (Questions).
//
// An assistant line with a top-level "error" (Claude Code's synthetic
// "API Error: ..." message) is not answer text either: the is_error result
// that follows carries the same message as the run's Error.
//
// Text and tool activity of subagents (lines whose parent_tool_use_id is
// set) is not the answer: their text is dropped, their tool calls and
// results are kept.
type ClaudeCode struct {
	sessionID string  // from system/init, for a result without one
	scratch   []block // the blocks of the line being parsed
	results   results // the events Parse returns

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
// Raw values and jstr alias the line.
type claudeLine struct {
	typ, subtype   jstr
	message        message
	event          streamEvent
	sessionID      jstr // decoded only by the lines that use it
	subagent       bool // parent_tool_use_id is a non-empty string
	isError        bool
	replay         bool // a user line echoing a message from stdin
	result         string
	errors         []byte // raw array
	durationMS     []byte // raw numbers
	cost, numTurns []byte
	usage          []byte // the result's usage object, raw
	errorText      string
	// system/api_retry
	attempt, maxRetries, errorStatus []byte
	// control_request
	requestID jstr
	request   []byte // raw object
}

// Parse implements Parser.
func (p *ClaudeCode) Parse(line []byte) []Event {
	var l claudeLine
	events := p.parse(line, &l)
	p.scratch = reuseBlocks(l.message.blocks, p.scratch)
	return events
}

func (p *ClaudeCode) parse(line []byte, l *claudeLine) []Event {
	line, ok := jsonLine(line)
	if !ok {
		return nil
	}
	r := reader{b: line}
	first := true
	for r.object(&first) {
		k := r.key()
		switch string(k) {
		case "type":
			l.typ = r.jstring()
		case "subtype":
			l.subtype = r.jstring()
		case "message":
			readMessage(&r, &l.message, p.scratch)
		case "event":
			l.event = readStreamEvent(&r)
		case "session_id":
			l.sessionID = r.jstring()
		case "parent_tool_use_id":
			s, _ := r.str()
			l.subagent = s != ""
		case "is_error":
			l.isError = r.boolean()
		case "isReplay":
			l.replay = r.boolean()
		case "result":
			l.result, _ = r.str()
		case "errors":
			l.errors = r.raw()
		case "duration_ms":
			l.durationMS = r.number()
		case "total_cost_usd":
			l.cost = r.number()
		case "usage": // the result line's; an assistant message's is inside "message"
			l.usage = r.raw()
		case "num_turns":
			l.numTurns = r.number()
		case "error":
			l.errorText, _ = r.str()
		case "attempt":
			l.attempt = r.number()
		case "max_retries":
			l.maxRetries = r.number()
		case "error_status":
			l.errorStatus = r.number()
		case "request_id":
			l.requestID = r.jstring()
		case "request":
			l.request = r.raw()
		default:
			r.skip()
		}
	}
	if !r.end() {
		return nil
	}
	switch string(l.typ.bytes()) {
	case "assistant":
		return p.assistant(l)
	case "user":
		return p.user(l)
	case "stream_event":
		return p.streamEvent(l)
	case "result":
		return p.results.one(p.result(l))
	case "system":
		return p.system(l)
	case "control_request":
		if e, ok := controlRequest(l.requestID, l.request); ok {
			return p.results.one(e)
		}
	}
	return nil
}

func (p *ClaudeCode) system(l *claudeLine) []Event {
	rememberInit(&p.sessionID, l.subtype, l.sessionID)
	if l.subtype.Is("api_retry") {
		return p.results.one(Event{Type: Warning, Message: retryMessage(l)})
	}
	return nil
}

// retryMessage tells the user why the answer is slow: the model API failed
// and the CLI retries, e.g. "the model API failed (529 overloaded);
// retrying, attempt 1 of 10".
func retryMessage(l *claudeLine) string {
	var b strings.Builder
	b.WriteString("the model API failed")
	if len(l.errorStatus) > 0 || l.errorText != "" {
		b.WriteString(" (")
		b.Write(l.errorStatus)
		if len(l.errorStatus) > 0 && l.errorText != "" {
			b.WriteByte(' ')
		}
		b.WriteString(l.errorText)
		b.WriteByte(')')
	}
	b.WriteString("; retrying")
	if len(l.attempt) > 0 {
		b.WriteString(", attempt ")
		b.Write(l.attempt)
		if len(l.maxRetries) > 0 {
			b.WriteString(" of ")
			b.Write(l.maxRetries)
		}
	}
	return b.String()
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
			if sub := l.subtype.String(); sub != "" {
				msg += " (" + sub + ")"
			}
		}
		return Event{Type: Error, Message: msg}
	}
	e := done(l.sessionID, p.sessionID, l.durationMS)
	if f, ok := parseFloat(l.cost); ok {
		e.stats().CostUSD = &f
	}
	if n, ok := parseInt(l.numTurns); ok && n == int64(int(n)) {
		t := int(n)
		e.stats().NumTurns = &t
	}
	claudeUsage(&e, l.usage)
	return e
}

// claudeUsage sets e's tokens from a result's usage object: input tokens
// with the cached ones (cache_creation_input_tokens, cache_read_input_tokens)
// counted in, and output tokens.
func claudeUsage(e *Event, usage []byte) {
	if len(usage) == 0 || usage[0] != '{' {
		return
	}
	var in, out int64
	var haveIn, haveOut bool
	r := reader{b: usage}
	first := true
	for r.object(&first) {
		switch string(r.key()) {
		case "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens":
			if n, ok := parseInt(r.number()); ok {
				in, haveIn = in+n, true
			}
		case "output_tokens":
			if n, ok := parseInt(r.number()); ok {
				out, haveOut = n, true
			}
		default:
			r.skip()
		}
	}
	if haveIn {
		e.stats().InputTokens = &in
	}
	if haveOut {
		e.stats().OutputTokens = &out
	}
}

// assistant turns the content blocks of an assistant message into events.
func (p *ClaudeCode) assistant(l *claudeLine) []Event {
	id := l.message.id.String()
	streamed := p.streamMsg == anyMessage || p.streamMsg != "" && (id == "" || id == p.streamMsg)
	blocks := l.message.blocks
	if l.message.content.set { // a plain string content is one text block
		blocks = []block{{typ: jstr{raw: []byte("text"), set: true}, text: l.message.content}}
	}
	events := p.results.start()
	for i := range blocks {
		b := &blocks[i]
		switch {
		case b.typ.Is("text"):
			if l.subagent || l.errorText != "" {
				continue
			}
			text := b.text.String()
			if streamed {
				text = p.unstreamed(text)
			}
			if text != "" {
				events = append(events, Event{Type: Text, Content: text})
			}
		case b.typ.Is("tool_use"):
			events = append(events, Event{Type: ToolCall, ID: b.id.String(), Name: b.name.String(), Args: objectOrEmpty(b.input)})
		}
	}
	return p.results.keep(events)
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

// user turns the tool_result blocks of a user message into events. A
// user message whose content is a plain string is the prompt echoed back;
// one replayed from stdin is a UserMessage.
func (p *ClaudeCode) user(l *claudeLine) []Event {
	if l.replay {
		return p.results.one(Event{Type: UserMessage})
	}
	events := p.results.start()
	for i := range l.message.blocks {
		b := &l.message.blocks[i]
		if b.typ.Is("tool_result") {
			events = append(events, Event{Type: ToolResult, ID: b.toolUseID.String(), Content: resultContent(b), IsError: b.isError})
		}
	}
	return p.results.keep(events)
}

// resultContent reads a tool_result's content: a string, or an array of
// blocks whose text blocks are joined with "\n" (images and other blocks
// are left out).
func resultContent(b *block) string {
	if b.content.set {
		return b.content.String()
	}
	var parts []string
	for i := range b.contentBlocks {
		if c := &b.contentBlocks[i]; c.typ.Is("text") {
			parts = append(parts, c.text.String())
		}
	}
	return strings.Join(parts, "\n")
}

// streamEvent is the part of a raw API stream event that the parser reads.
type streamEvent struct {
	typ       jstr
	index     int64
	msgID     jstr // message_start's message.id
	blockType jstr // content_block_start's content_block.type
	deltaType jstr
	text      jstr // content_block_delta's delta.text
}

func readStreamEvent(r *reader) streamEvent {
	e := streamEvent{index: -1}
	if r.peek() != '{' {
		r.skip()
		return e
	}
	first := true
	for r.object(&first) {
		switch string(r.key()) {
		case "type":
			e.typ = r.jstring()
		case "index":
			if n, ok := parseInt(r.number()); ok {
				e.index = n
			}
		case "message":
			var m message
			readMessage(r, &m, nil)
			e.msgID = m.id
		case "content_block":
			e.blockType = readBlock(r).typ
		case "delta":
			d := readBlock(r)
			e.deltaType, e.text = d.typ, d.text
		default:
			r.skip()
		}
	}
	return e
}

// streamEvent handles one raw API stream event from --include-partial-messages.
func (p *ClaudeCode) streamEvent(l *claudeLine) []Event {
	if l.subagent {
		return nil
	}
	e := &l.event
	switch {
	case e.typ.Is("message_start"):
		p.resetStream()
		p.streamMsg = e.msgID.String()
		if p.streamMsg == "" {
			p.streamMsg = anyMessage
		}
	case e.typ.Is("content_block_start"):
		if b := p.block(e.index); b != nil && e.blockType.Is("text") {
			b.text = true
		}
	case e.typ.Is("content_block_delta"):
		if !e.deltaType.Is("text_delta") {
			return nil
		}
		text := e.text.String()
		if text == "" {
			return nil
		}
		if p.streamMsg == "" {
			p.streamMsg = anyMessage // deltas without a message_start still count
		}
		if b := p.block(e.index); b != nil {
			b.text = true
			b.streamed = append(b.streamed, text...)
		}
		return p.results.one(Event{Type: Text, Content: text})
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
