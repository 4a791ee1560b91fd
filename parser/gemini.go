package parser

import "strings"

// Gemini parses the stream-json output of Google's Gemini CLI
// (`gemini -p PROMPT --output-format stream-json`).
//
// Line types and what they become:
//
//   - init: no event; its session_id is the run's session id.
//   - message: role "user" is the prompt echoed back, not answer text.
//     role "assistant" with delta true is a piece of the answer and becomes
//     Text; a whole assistant message (no delta) becomes Text too, unless it
//     repeats the text the deltas since the last tool event delivered.
//   - tool_use becomes ToolCall (tool_id, tool_name, parameters);
//     tool_result becomes ToolResult: its error's message, else its output;
//     any status other than "success" is an error result.
//   - error (the CLI's non-fatal notices, e.g. a loop it detected): Warning.
//   - result with status "success" becomes Done with the session id,
//     stats.duration_ms and the stats' input_tokens and output_tokens (the
//     CLI reports no cost); any other status becomes Error with
//     error.message, an "[API Error: {...}]" reduced to the API's message.
//   - anything unknown: skipped.
type Gemini struct {
	sessionID string
	seg       []byte  // assistant text since the last tool event
	results   results // the events Parse returns
}

// NewGemini returns a parser for one Gemini CLI run.
func NewGemini() Parser { return &Gemini{} }

type geminiLine struct {
	typ, role, status  jstr
	sessionID          jstr
	content            jstr
	delta              bool
	toolName, toolID   jstr
	parameters, output []byte // raw
	errorRaw, stats    []byte // raw
	message            jstr
}

// Parse implements Parser.
func (p *Gemini) Parse(line []byte) []Event {
	line, ok := jsonLine(line)
	if !ok {
		return nil
	}
	var l geminiLine
	r := reader{b: line}
	first := true
	for r.object(&first) {
		switch string(r.key()) {
		case "type":
			l.typ = r.jstring()
		case "role":
			l.role = r.jstring()
		case "status":
			l.status = r.jstring()
		case "session_id":
			l.sessionID = r.jstring()
		case "content":
			l.content = r.jstring()
		case "delta":
			l.delta = r.boolean()
		case "tool_name":
			l.toolName = r.jstring()
		case "tool_id":
			l.toolID = r.jstring()
		case "parameters":
			l.parameters = r.raw()
		case "output":
			l.output = r.raw()
		case "error":
			l.errorRaw = r.raw()
		case "message":
			l.message = r.jstring()
		case "stats":
			l.stats = r.raw()
		default:
			r.skip()
		}
	}
	if !r.end() {
		return nil
	}
	switch string(l.typ.bytes()) {
	case "init":
		if s := l.sessionID.String(); s != "" {
			p.sessionID = s
		}
	case "message":
		return p.message(&l)
	case "tool_use":
		p.seg = p.seg[:0]
		return p.results.one(Event{Type: ToolCall, ID: l.toolID.String(), Name: l.toolName.String(), Args: objectOrEmpty(l.parameters)})
	case "tool_result":
		p.seg = p.seg[:0]
		res := Event{Type: ToolResult, ID: l.toolID.String(), IsError: !l.status.Is("success"), Content: messageOf(l.errorRaw)}
		if res.Content == "" {
			res.Content = errorText(l.output)
		}
		return p.results.one(res)
	case "error":
		if msg := l.message.String(); msg != "" {
			return p.results.one(Event{Type: Warning, Message: msg})
		}
	case "result":
		return p.results.one(p.result(&l))
	}
	return nil
}

func (p *Gemini) message(l *geminiLine) []Event {
	if !l.role.Is("assistant") {
		return nil
	}
	text := l.content.String()
	if text == "" {
		return nil
	}
	if !l.delta && len(p.seg) > 0 && text == string(p.seg) {
		p.seg = p.seg[:0]
		return nil // the whole message after its deltas
	}
	p.seg = append(p.seg, text...)
	return p.results.one(Event{Type: Text, Content: text})
}

func (p *Gemini) result(l *geminiLine) Event {
	if !l.status.Is("success") {
		msg := geminiErrorMessage(messageOf(l.errorRaw))
		if msg == "" {
			msg = "the agent reported an error"
			if s := l.status.String(); s != "" {
				msg += " (" + s + ")"
			}
		}
		return Event{Type: Error, Message: msg}
	}
	e := Event{Type: Done, SessionID: p.sessionID}
	if len(l.stats) == 0 || l.stats[0] != '{' {
		return e
	}
	r := reader{b: l.stats}
	first := true
	for r.object(&first) {
		switch string(r.key()) {
		case "duration_ms":
			if n, ok := parseInt(r.number()); ok {
				e.stats().DurationMS = &n
			}
		case "input_tokens":
			if n, ok := parseInt(r.number()); ok {
				e.stats().InputTokens = &n
			}
		case "output_tokens":
			if n, ok := parseInt(r.number()); ok {
				e.stats().OutputTokens = &n
			}
		default:
			r.skip()
		}
	}
	return e
}

// geminiErrorMessage reduces the CLI's "[API Error: {json body}]" to the
// API's own message; other messages are returned trimmed.
func geminiErrorMessage(msg string) string {
	msg = strings.TrimSpace(msg)
	if inner, ok := strings.CutPrefix(msg, "[API Error: "); ok {
		if inner, ok = strings.CutSuffix(inner, "]"); ok {
			return apiErrorMessage(inner)
		}
	}
	return msg
}
