package parser

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Cursor parses the stream-json output of Cursor's
// `agent -p --output-format stream-json --stream-partial-output`.
//
// Line types and what they become:
//
//   - system: never terminal; init's session_id is remembered for a result
//     that lacks one.
//   - assistant: the text blocks of message.content, concatenated, become
//     Text. With --stream-partial-output each line is a delta, and Cursor
//     closes every segment (the text between tool calls, and the text before
//     the result) with a summary line repeating the segment's text; that
//     line is recognized by comparing it with the text accumulated since the
//     segment began (also when it comes after the tool call that ended the
//     segment), and skipped.
//   - tool_call started: ToolCall. completed: ToolResult. The tool is the
//     key of tool_call ending in "ToolCall", reported without that suffix
//     ("shellToolCall" is "shell"), with its args; or the "function" key's
//     {name, arguments}, arguments being a JSON string decoded into the args
//     object. The id is call_id (it may contain "\n").
//   - result: is_error true (or subtype "error") becomes Error with the
//     result text and no duration; otherwise Done, its session_id winning
//     over init's, and duration_ms exactly as given (absent stays absent,
//     0 is a value).
//   - user, thinking and anything unknown: skipped.
type Cursor struct {
	sessionID string  // from system/init, for a result without one
	scratch   []block // the blocks of the line being parsed
	results   results // the events Parse returns

	seg       []byte // text delivered since the current segment began
	segDeltas int    // assistant lines that delivered it

	// The segment a tool call closed before its summary was seen, in case
	// the summary comes after the tool call.
	closed       []byte
	closedDeltas int
}

// NewCursor returns a parser for one Cursor agent run.
func NewCursor() Parser { return &Cursor{} }

type cursorLine struct {
	typ, subtype jstr
	message      message
	toolCall     []byte // raw
	callID       string
	sessionID    jstr // decoded only by the lines that use it
	isError      bool
	result       string
	errorText    string
	durationMS   []byte
	timestamped  bool // timestamp_ms present: Cursor marks its deltas so
	modelCallID  bool // model_call_id present: Cursor marks summaries so
}

// Parse implements Parser.
func (p *Cursor) Parse(line []byte) []Event {
	var l cursorLine
	events := p.parse(line, &l)
	p.scratch = reuseBlocks(l.message.blocks, p.scratch)
	return events
}

func (p *Cursor) parse(line []byte, l *cursorLine) []Event {
	line, ok := jsonLine(line)
	if !ok {
		return nil
	}
	r := reader{b: line}
	first := true
	for r.object(&first) {
		switch string(r.key()) {
		case "type":
			l.typ = r.jstring()
		case "subtype":
			l.subtype = r.jstring()
		case "message":
			readMessage(&r, &l.message, p.scratch)
		case "tool_call":
			l.toolCall = r.raw()
		case "call_id":
			l.callID, _ = r.str()
		case "session_id":
			l.sessionID = r.jstring()
		case "is_error":
			l.isError = r.boolean()
		case "result":
			l.result, _ = r.str()
		case "error":
			l.errorText = errorText(r.raw())
		case "duration_ms":
			l.durationMS = r.number()
		case "timestamp_ms":
			l.timestamped = r.number() != nil
		case "model_call_id":
			s, _ := r.str()
			l.modelCallID = s != ""
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
	case "tool_call":
		return p.toolCall(l)
	case "result":
		return p.results.one(p.result(l))
	case "system":
		rememberInit(&p.sessionID, l.subtype, l.sessionID)
	}
	return nil
}

func (p *Cursor) assistant(l *cursorLine) []Event {
	var text string
	if l.message.content.set { // tolerate a plain string
		text = l.message.content.String()
	} else {
		text = joinText(l.message.blocks)
	}
	if text == "" {
		return nil
	}
	if isSummary(l, text, p.seg, p.segDeltas) || len(p.seg) == 0 && isSummary(l, text, p.closed, p.closedDeltas) {
		p.endSegment()
		return nil
	}
	p.closed = p.closed[:0]
	p.seg = append(p.seg, text...)
	p.segDeltas++
	return p.results.one(Event{Type: Text, Content: text})
}

// joinText concatenates the text blocks of blocks.
func joinText(blocks []block) string {
	var parts []string
	for i := range blocks {
		if b := &blocks[i]; b.typ.Is("text") {
			if len(blocks) == 1 {
				return b.text.String()
			}
			parts = append(parts, b.text.String())
		}
	}
	return strings.Join(parts, "")
}

// isSummary reports whether text is the line that closes a segment by
// repeating it: it must equal the segment's text, seg, delivered by deltas
// lines. A delta that merely repeats a one-delta segment ("ha", "ha") is
// told apart by Cursor's marks when present: deltas carry timestamp_ms,
// summaries carry model_call_id or no timestamp.
func isSummary(l *cursorLine, text string, seg []byte, deltas int) bool {
	if len(seg) == 0 || string(seg) != text {
		return false
	}
	looksLikeDelta := l.timestamped && !l.modelCallID
	return deltas > 1 || !looksLikeDelta
}

// endSegment forgets the segment after its summary or at the result.
func (p *Cursor) endSegment() {
	p.seg = p.seg[:0]
	p.segDeltas = 0
	p.closed = p.closed[:0]
	p.closedDeltas = 0
}

// closeSegment ends the segment at a tool call. Its text is kept until the
// next text, so that a summary printed after the tool call is still
// recognized.
func (p *Cursor) closeSegment() {
	if len(p.seg) == 0 {
		return
	}
	p.closed, p.seg = p.seg, p.closed[:0]
	p.closedDeltas, p.segDeltas = p.segDeltas, 0
}

func (p *Cursor) result(l *cursorLine) Event {
	p.endSegment()
	if l.isError || l.subtype.Is("error") {
		msg := l.result
		if msg == "" {
			msg = l.errorText
		}
		if msg == "" {
			msg = "the agent reported an error"
		}
		return Event{Type: Error, Message: msg}
	}
	return done(l.sessionID, p.sessionID, l.durationMS)
}

// toolCall turns a started line into a ToolCall and a completed line into
// a ToolResult.
func (p *Cursor) toolCall(l *cursorLine) []Event {
	p.closeSegment()
	started := l.subtype.Is("started")
	if !started && !l.subtype.Is("completed") {
		return nil
	}
	var name string
	var body []byte
	var function bool
	r := reader{b: l.toolCall}
	first := true
	for r.object(&first) {
		k := r.key()
		if body == nil && bytes.HasSuffix(k, []byte("ToolCall")) {
			name = string(k[:len(k)-len("ToolCall")])
			if name == "" {
				name = "tool"
			}
			body = r.raw()
		} else if body == nil && string(k) == "function" {
			function = true
			body = r.raw()
		} else {
			r.skip()
		}
	}
	if r.bad || body == nil {
		return nil
	}
	var args, result []byte
	var arguments string
	r = reader{b: body}
	first = true
	for r.object(&first) {
		switch string(r.key()) {
		case "args":
			args = r.raw()
		case "result":
			result = r.raw()
		case "name":
			if function {
				name, _ = r.str()
			} else {
				r.skip()
			}
		case "arguments":
			if function && r.peek() == '"' {
				arguments, _ = r.str()
			} else if function {
				args = r.raw()
			} else {
				r.skip()
			}
		default:
			r.skip()
		}
	}
	if r.bad {
		return nil
	}
	if started {
		e := Event{Type: ToolCall, ID: l.callID, Name: name, Args: objectOrEmpty(args)}
		if arguments != "" {
			e.Args = argumentsObject(arguments)
		}
		return p.results.one(e)
	}
	content, isErr := toolResult(result)
	return p.results.one(Event{Type: ToolResult, ID: l.callID, Content: content, IsError: isErr})
}

// argumentsObject turns a function call's arguments string into the args
// object: the string itself when it holds a JSON object (compacted, so it
// prints on one line), else {"arguments": the string}.
func argumentsObject(s string) json.RawMessage {
	var buf bytes.Buffer
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") && json.Compact(&buf, []byte(t)) == nil {
		return buf.Bytes()
	}
	b, _ := json.Marshal(map[string]string{"arguments": s})
	return b
}

// toolResult renders a completed tool call's result object as the text a
// user sees, and whether it failed. {"success": ...} is shown by its most
// telling field (a shell's stdout and stderr, a read's content, a glob's
// files, else the object as JSON); a shell command with a non-zero exit
// code failed. Any other key ("error", "rejected", ...) is a failure, shown
// by its message when it has one.
func toolResult(raw []byte) (content string, isErr bool) {
	r := reader{b: raw}
	if r.peek() != '{' {
		s, _ := r.str()
		return s, false
	}
	var key string
	var val []byte
	first := true
	for r.object(&first) {
		k := r.key()
		if string(k) == "success" || key == "" {
			key, val = string(k), r.raw()
		} else {
			r.skip()
		}
	}
	if r.bad || key == "" {
		return "", false
	}
	if key != "success" {
		msg := errorText(val)
		if key == "error" {
			return msg, true
		}
		if msg == "" {
			return key, true
		}
		return key + ": " + msg, true
	}
	return successText(val)
}

func successText(raw []byte) (string, bool) {
	r := reader{b: raw}
	if r.peek() != '{' {
		s, _ := r.str()
		return s, false
	}
	var stdout, stderr, content, output string
	var hasShell, hasContent, hasOutput bool
	var files []byte
	var exitCode int64
	first := true
	for r.object(&first) {
		switch string(r.key()) {
		case "stdout":
			stdout, hasShell = strOr(&r, stdout, hasShell)
		case "stderr":
			stderr, hasShell = strOr(&r, stderr, hasShell)
		case "exitCode":
			exitCode, _ = parseInt(r.number())
		case "content":
			content, hasContent = strOr(&r, content, hasContent)
		case "output":
			output, hasOutput = strOr(&r, output, hasOutput)
		case "files":
			files = r.raw()
		default:
			r.skip()
		}
	}
	switch {
	case r.bad:
		return "", false
	case hasShell:
		if stderr != "" {
			if stdout != "" && !strings.HasSuffix(stdout, "\n") {
				stdout += "\n"
			}
			stdout += stderr
		}
		return stdout, exitCode != 0
	case hasContent:
		return content, false
	case hasOutput:
		return output, false
	case files != nil:
		return joinStrings(files, "\n"), false
	}
	return string(raw), false
}

// strOr reads a string value; other kinds leave s and has unchanged.
func strOr(r *reader, s string, has bool) (string, bool) {
	if r.peek() != '"' {
		r.skip()
		return s, has
	}
	v, _ := r.str()
	return v, true
}

// errorText reads an error value: a string, or an object's errorMessage,
// message, error or reason string, else the value as JSON text.
func errorText(raw []byte) string {
	r := reader{b: raw}
	switch r.peek() {
	case '"':
		s, _ := r.str()
		return s
	case '{':
		var msg string
		first := true
		for r.object(&first) {
			switch string(r.key()) {
			case "errorMessage", "message", "error", "reason":
				if s, ok := r.str(); ok && msg == "" {
					msg = s
				}
			default:
				r.skip()
			}
		}
		if msg != "" {
			return msg
		}
	case 0, 'n':
		return ""
	}
	return string(raw)
}
