package parser

import (
	"strings"
)

// Codex parses the JSONL output of OpenAI Codex's `codex exec --json`.
//
// Line types and what they become:
//
//   - thread.started: no event; its thread_id is the run's session id. A
//     parser made with NewCodexResume for session S that sees another
//     thread id (Codex silently starts a new thread for a name it does not
//     know) emits a Warning with SessionReset set.
//   - item.started of a tool item becomes ToolCall; its item.completed
//     becomes ToolResult (preceded by the ToolCall when no item.started was
//     seen). Tool items: command_execution ("Shell", args {command}; a
//     non-zero exit code or a failed status is an error result, the
//     aggregated output its content), file_change ("Edit", args {path,
//     changes}; content "add PATH" lines), mcp_tool_call ("SERVER/TOOL",
//     its arguments; its result's text blocks or its error), web_search
//     ("WebSearch", args {query}). The id is the item's id.
//   - item.completed agent_message becomes Text; a second message of the
//     run starts with a blank line so paragraphs do not run together.
//     reasoning and todo_list items are not answer text and are dropped.
//     error items (Codex's own notices, e.g. unknown model metadata) become
//     Warning.
//   - error (top level): "Reconnecting... N/M (reason)" is the CLI retrying
//     the model API, at once a Warning "the model API failed (reason);
//     retrying, attempt N of M". Any other message is held until the
//     next line: when that is turn.failed, the run's Error carries the
//     message once; otherwise it becomes a Warning before that line's events.
//   - turn.completed becomes Done with the thread id and the usage's
//     input_tokens and output_tokens (Codex reports no duration or cost).
//   - turn.failed becomes Error with error.message; a message that is an
//     API error body ({"error":{"message":...}}) is reduced to its message.
//   - turn.started and anything unknown: skipped.
type Codex struct {
	threadID string
	resume   string // the session the run resumes ("" for a new one)
	texted   bool   // an agent_message was delivered
	started  map[string]bool
	pending  string  // a top-level error message not yet delivered
	results  results // the events Parse returns
}

// NewCodex returns a parser for one Codex run that starts a new thread.
func NewCodex() Parser { return &Codex{} }

// NewCodexResume returns a parser for one Codex run that resumes session
// id: a thread.started with another thread id means Codex could not find
// it and started afresh, which the parser reports as a session reset.
func NewCodexResume(id string) Parser { return &Codex{resume: id} }

type codexLine struct {
	typ      jstr
	threadID jstr
	item     codexItem
	usage    []byte // raw object
	errorRaw []byte // turn.failed's error object
	message  jstr   // a top-level error's message
}

type codexItem struct {
	id, typ, text, message jstr
	command                jstr
	output                 jstr // aggregated_output
	exitCode               []byte
	status                 jstr
	changes                []byte // raw array
	server, tool           jstr
	arguments              []byte // raw
	result                 []byte // raw
	errorRaw               []byte // raw
	query                  jstr
}

// Parse implements Parser.
func (p *Codex) Parse(line []byte) []Event {
	var l codexLine
	if !p.decode(line, &l) {
		return nil
	}
	events := p.results.start()
	if p.pending != "" && !l.typ.Is("turn.failed") {
		events = append(events, Event{Type: Warning, Message: p.pending})
		p.pending = ""
	}
	switch string(l.typ.bytes()) {
	case "thread.started":
		p.threadID = l.threadID.String()
		if p.resume != "" && p.threadID != "" && p.threadID != p.resume {
			events = append(events, Event{Type: Warning, SessionReset: true,
				Message: "could not resume session " + p.resume + "; codex started a new one"})
		}
	case "item.started":
		if call, ok := p.toolCall(&l.item); ok {
			events = append(events, call)
		}
	case "item.completed":
		events = p.itemCompleted(&l.item, events)
	case "error":
		msg := l.message.String()
		if strings.HasPrefix(msg, "Reconnecting...") {
			events = append(events, Event{Type: Warning, Message: codexRetryMessage(msg)})
		} else if msg != "" {
			p.pending = apiErrorMessage(msg)
		}
	case "turn.completed":
		events = append(events, p.done(l.usage))
	case "turn.failed":
		msg := apiErrorMessage(messageOf(l.errorRaw))
		if msg == "" {
			msg = p.pending
		}
		if msg == "" {
			msg = "codex reported a failed turn"
		}
		p.pending = ""
		events = append(events, Event{Type: Error, Message: msg})
	}
	return p.results.keep(events)
}

func (p *Codex) decode(line []byte, l *codexLine) bool {
	line, ok := jsonLine(line)
	if !ok {
		return false
	}
	r := reader{b: line}
	first := true
	for r.object(&first) {
		switch string(r.key()) {
		case "type":
			l.typ = r.jstring()
		case "thread_id":
			l.threadID = r.jstring()
		case "item":
			readCodexItem(&r, &l.item)
		case "usage":
			l.usage = r.raw()
		case "error":
			l.errorRaw = r.raw()
		case "message":
			l.message = r.jstring()
		default:
			r.skip()
		}
	}
	return r.end()
}

func readCodexItem(r *reader, it *codexItem) {
	if r.peek() != '{' {
		r.skip()
		return
	}
	first := true
	for r.object(&first) {
		switch string(r.key()) {
		case "id":
			it.id = r.jstring()
		case "type":
			it.typ = r.jstring()
		case "text":
			it.text = r.jstring()
		case "message":
			it.message = r.jstring()
		case "command":
			it.command = r.jstring()
		case "aggregated_output":
			it.output = r.jstring()
		case "exit_code":
			it.exitCode = r.number()
		case "status":
			it.status = r.jstring()
		case "changes":
			it.changes = r.raw()
		case "server":
			it.server = r.jstring()
		case "tool":
			it.tool = r.jstring()
		case "arguments":
			it.arguments = r.raw()
		case "result":
			it.result = r.raw()
		case "error":
			it.errorRaw = r.raw()
		case "query":
			it.query = r.jstring()
		default:
			r.skip()
		}
	}
}

// toolCall returns the ToolCall of a tool item, remembering that it was
// announced; ok is false for items that are not tools.
func (p *Codex) toolCall(it *codexItem) (Event, bool) {
	id := it.id.String()
	var e Event
	switch {
	case it.typ.Is("command_execution"):
		e = Event{Name: "Shell", Args: jsonObject("command", it.command.String())}
	case it.typ.Is("file_change"):
		e = Event{Name: "Edit", Args: fileChangeArgs(it.changes)}
	case it.typ.Is("mcp_tool_call"):
		e = Event{Name: it.server.String() + "/" + it.tool.String(), Args: objectOrEmpty(it.arguments)}
	case it.typ.Is("web_search"):
		e = Event{Name: "WebSearch", Args: jsonObject("query", it.query.String())}
	default:
		return Event{}, false
	}
	e.Type, e.ID = ToolCall, id
	if p.started == nil {
		p.started = map[string]bool{}
	}
	p.started[id] = true
	return e, true
}

func (p *Codex) itemCompleted(it *codexItem, events []Event) []Event {
	switch {
	case it.typ.Is("agent_message"):
		text := it.text.String()
		if text == "" {
			return events
		}
		if p.texted {
			text = "\n\n" + text
		}
		p.texted = true
		return append(events, Event{Type: Text, Content: text})
	case it.typ.Is("error"):
		if msg := it.message.String(); msg != "" {
			return append(events, Event{Type: Warning, Message: msg})
		}
		return events
	}
	id := it.id.String()
	if !p.started[id] {
		call, ok := p.toolCall(it)
		if !ok {
			return events // reasoning, todo_list, unknown items
		}
		events = append(events, call)
	}
	delete(p.started, id)
	res := Event{Type: ToolResult, ID: id}
	failed := it.status.Is("failed") || it.status.Is("declined")
	switch {
	case it.typ.Is("command_execution"):
		res.Content = it.output.String()
		code, ok := parseInt(it.exitCode)
		res.IsError = failed || ok && code != 0
	case it.typ.Is("file_change"):
		res.Content = fileChangeSummary(it.changes)
		res.IsError = failed
	case it.typ.Is("mcp_tool_call"):
		if msg := messageOf(it.errorRaw); msg != "" {
			res.Content, res.IsError = msg, true
		} else {
			res.Content = mcpResultText(it.result)
			res.IsError = failed
		}
	case it.typ.Is("web_search"):
		res.Content = it.query.String()
		res.IsError = failed
	}
	return append(events, res)
}

func (p *Codex) done(usage []byte) Event {
	e := Event{Type: Done, SessionID: p.threadID}
	if len(usage) == 0 || usage[0] != '{' {
		return e
	}
	r := reader{b: usage}
	first := true
	for r.object(&first) {
		switch string(r.key()) {
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

// fileChangeArgs is a file_change's args: the first changed path (what a
// person wants to see) and the changes array as Codex gave it.
func fileChangeArgs(changes []byte) []byte {
	paths, _ := fileChanges(changes)
	b := []byte(`{"path":`)
	first := ""
	if len(paths) > 0 {
		first = paths[0]
	}
	b = appendJSONString(b, first)
	if len(changes) > 0 && changes[0] == '[' {
		b = append(b, `,"changes":`...)
		b = append(b, changes...)
	}
	return append(b, '}')
}

// fileChangeSummary is a file_change's result: one "KIND PATH" line per change.
func fileChangeSummary(changes []byte) string {
	paths, kinds := fileChanges(changes)
	lines := make([]string, len(paths))
	for i := range paths {
		lines[i] = kinds[i] + " " + paths[i]
	}
	return strings.Join(lines, "\n")
}

// fileChanges reads the paths and kinds of a file_change's changes array.
func fileChanges(changes []byte) (paths, kinds []string) {
	if len(changes) == 0 || changes[0] != '[' {
		return nil, nil
	}
	r := reader{b: changes}
	first := true
	for r.array(&first) {
		if r.peek() != '{' {
			r.skip()
			continue
		}
		var path, kind string
		f := true
		for r.object(&f) {
			switch string(r.key()) {
			case "path":
				path, _ = r.str()
			case "kind":
				kind, _ = r.str()
			default:
				r.skip()
			}
		}
		paths, kinds = append(paths, path), append(kinds, kind)
	}
	return paths, kinds
}

// mcpResultText joins the text blocks of an MCP tool result's content.
func mcpResultText(result []byte) string {
	if len(result) == 0 || result[0] != '{' {
		return ""
	}
	var parts []string
	r := reader{b: result}
	first := true
	for r.object(&first) {
		if string(r.key()) != "content" {
			r.skip()
			continue
		}
		for _, b := range readBlocks(&r, nil) {
			if b.typ.Is("text") {
				parts = append(parts, b.text.String())
			}
		}
	}
	return strings.Join(parts, "\n")
}

// messageOf reads the "message" of an error object ("" when it has none).
func messageOf(raw []byte) string {
	if len(raw) == 0 || raw[0] != '{' {
		return ""
	}
	var msg string
	r := reader{b: raw}
	first := true
	for r.object(&first) {
		if string(r.key()) == "message" {
			msg, _ = r.str()
		} else {
			r.skip()
		}
	}
	return msg
}

// jsonObject is the JSON object {key: value}.
func jsonObject(key, value string) []byte {
	b := appendJSONString([]byte{'{'}, key)
	b = append(b, ':')
	b = appendJSONString(b, value)
	return append(b, '}')
}

// apiErrorMessage reduces an error message that is a model API's JSON
// error body, {"error":{"message":"..."}} or {"message":"..."}, to its
// message; any other message is returned trimmed.
func apiErrorMessage(msg string) string {
	msg = strings.TrimSpace(msg)
	if !strings.HasPrefix(msg, "{") {
		return msg
	}
	r := reader{b: []byte(msg)}
	var found string
	first := true
	for r.object(&first) {
		switch string(r.key()) {
		case "error":
			if r.peek() == '{' {
				if s := errorText(r.raw()); s != "" && found == "" {
					found = s
				}
			} else if s, ok := r.str(); ok && s != "" && found == "" {
				found = s
			}
		case "message":
			if s, ok := r.str(); ok && s != "" && found == "" {
				found = s
			}
		default:
			r.skip()
		}
	}
	if !r.end() || found == "" {
		return msg
	}
	return found
}

// codexRetryMessage rewrites Codex's "Reconnecting... 2/5 (reason)" as
// Claude Code's retries read: "the model API failed (reason); retrying,
// attempt 2 of 5".
func codexRetryMessage(msg string) string {
	rest := strings.TrimSpace(strings.TrimPrefix(msg, "Reconnecting..."))
	count, reason, _ := strings.Cut(rest, " ")
	reason = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(reason), "("), ")")
	var b strings.Builder
	b.WriteString("the model API failed")
	if reason != "" {
		b.WriteString(" (" + reason + ")")
	}
	b.WriteString("; retrying")
	if n, of, ok := strings.Cut(count, "/"); ok && n != "" && of != "" {
		b.WriteString(", attempt " + n + " of " + of)
	}
	return b.String()
}
