package parser

import "strconv"

// OpenCode parses the JSON lines of `opencode run --format json`. Every
// line carries the session id (sessionID) and a part; OpenCode prints no
// result line, so the run's Done comes from End (see Ender).
//
// Line types and what they become:
//
//   - step_start: no event (one model call begins).
//   - text: the part's text (whole, once written) becomes Text; a text
//     after an earlier one starts with a blank line so paragraphs do not
//     run together.
//   - tool_use (printed once the tool finished): ToolCall (part.callID,
//     part.tool, state.input), then ToolResult: state.output, or
//     state.error when the tool failed (state.status "error"), which is an
//     error result, as is a command whose metadata.exit is not 0.
//   - step_finish: no event; its reason, cost and tokens are kept.
//   - error: Error with error.data.message (else error.name).
//   - anything unknown: skipped.
//
// End: when the process exited 0 and the last step_finish said "stop", the
// run is Done with the session id, the cost and tokens summed over the
// steps (input tokens with cache reads and writes), the number of steps as
// num_turns and the time from the first line to the last step_finish as
// duration_ms. A clean exit after another reason ("length", "tool-calls")
// is an Error naming it; an unclean one is left to Guard.Finish, whose
// message carries the CLI's stderr (e.g. "Session not found").
type OpenCode struct {
	sessionID  string
	texted     bool
	steps      int
	lastReason string
	cost       float64
	costSeen   bool
	in, out    int64
	tokensSeen bool
	first      int64   // timestamp of the first line, ms
	finished   int64   // timestamp of the last step_finish, ms
	results    results // the events Parse returns
}

var _ Ender = (*OpenCode)(nil)

// NewOpenCode returns a parser for one OpenCode run.
func NewOpenCode() Parser { return &OpenCode{} }

type opencodeLine struct {
	typ       jstr
	sessionID jstr
	timestamp int64
	part      opencodePart
	errorRaw  []byte
}

type opencodePart struct {
	text, tool, callID, reason jstr
	state                      []byte // raw
	tokens                     []byte // raw
	cost                       []byte
}

// Parse implements Parser.
func (p *OpenCode) Parse(line []byte) []Event {
	line, ok := jsonLine(line)
	if !ok {
		return nil
	}
	var l opencodeLine
	r := reader{b: line}
	first := true
	for r.object(&first) {
		switch string(r.key()) {
		case "type":
			l.typ = r.jstring()
		case "sessionID":
			l.sessionID = r.jstring()
		case "timestamp":
			l.timestamp, _ = parseInt(r.number())
		case "part":
			readOpenCodePart(&r, &l.part)
		case "error":
			l.errorRaw = r.raw()
		default:
			r.skip()
		}
	}
	if !r.end() {
		return nil
	}
	if s := l.sessionID.String(); s != "" {
		p.sessionID = s
	}
	if p.first == 0 {
		p.first = l.timestamp
	}
	switch string(l.typ.bytes()) {
	case "text":
		text := l.part.text.String()
		if text == "" {
			return nil
		}
		if p.texted {
			text = "\n\n" + text
		}
		p.texted = true
		return p.results.one(Event{Type: Text, Content: text})
	case "tool_use":
		return p.results.keep(openCodeTool(&l.part, p.results.start()))
	case "step_finish":
		p.stepFinished(&l)
	case "error":
		return p.results.one(Event{Type: Error, Message: openCodeError(l.errorRaw)})
	}
	return nil
}

func readOpenCodePart(r *reader, pt *opencodePart) {
	if r.peek() != '{' {
		r.skip()
		return
	}
	first := true
	for r.object(&first) {
		switch string(r.key()) {
		case "text":
			pt.text = r.jstring()
		case "tool":
			pt.tool = r.jstring()
		case "callID":
			pt.callID = r.jstring()
		case "reason":
			pt.reason = r.jstring()
		case "state":
			pt.state = r.raw()
		case "tokens":
			pt.tokens = r.raw()
		case "cost":
			pt.cost = r.number()
		default:
			r.skip()
		}
	}
}

// openCodeTool appends a finished tool part's call and result to events.
func openCodeTool(pt *opencodePart, events []Event) []Event {
	id := pt.callID.String()
	if id == "" && !pt.tool.set {
		return events // not a tool part
	}
	var input []byte
	var status, output, errMsg string
	exit := int64(0)
	if len(pt.state) > 0 && pt.state[0] == '{' {
		r := reader{b: pt.state}
		first := true
		for r.object(&first) {
			switch string(r.key()) {
			case "status":
				status, _ = r.str()
			case "input":
				input = r.raw()
			case "output":
				output, _ = r.str()
			case "error":
				errMsg = errorText(r.raw())
			case "metadata":
				exit = metadataExit(r.raw())
			default:
				r.skip()
			}
		}
	}
	res := Event{Type: ToolResult, ID: id, Content: output, IsError: status == "error" || exit != 0}
	if status == "error" && errMsg != "" {
		res.Content = errMsg
	}
	return append(events, Event{Type: ToolCall, ID: id, Name: pt.tool.String(), Args: objectOrEmpty(input)}, res)
}

// metadataExit reads metadata.exit (a bash tool's exit code; 0 when absent).
func metadataExit(raw []byte) int64 {
	if len(raw) == 0 || raw[0] != '{' {
		return 0
	}
	var exit int64
	r := reader{b: raw}
	first := true
	for r.object(&first) {
		if string(r.key()) == "exit" {
			exit, _ = parseInt(r.number())
		} else {
			r.skip()
		}
	}
	return exit
}

func (p *OpenCode) stepFinished(l *opencodeLine) {
	p.steps++
	p.lastReason = l.part.reason.String()
	p.finished = l.timestamp
	if f, ok := parseFloat(l.part.cost); ok {
		p.cost += f
		p.costSeen = true
	}
	if len(l.part.tokens) == 0 || l.part.tokens[0] != '{' {
		return
	}
	p.tokensSeen = true
	r := reader{b: l.part.tokens}
	first := true
	for r.object(&first) {
		switch string(r.key()) {
		case "input":
			n, _ := parseInt(r.number())
			p.in += n
		case "output":
			n, _ := parseInt(r.number())
			p.out += n
		case "reasoning":
			n, _ := parseInt(r.number())
			p.out += n
		case "cache":
			if r.peek() != '{' {
				r.skip()
				continue
			}
			f := true
			for r.object(&f) {
				switch string(r.key()) {
				case "read", "write":
					n, _ := parseInt(r.number())
					p.in += n
				default:
					r.skip()
				}
			}
		default:
			r.skip()
		}
	}
}

// End implements Ender.
func (p *OpenCode) End(exitedOK bool) (Event, bool) {
	switch {
	case !exitedOK:
		return Event{}, false
	case p.steps == 0:
		return Event{}, false
	case p.lastReason != "stop":
		return Event{Type: Error, Message: "the agent stopped before it finished (its last step ended with " + strconv.Quote(p.lastReason) + ")"}, true
	}
	st := &RunStats{}
	if p.costSeen {
		c := p.cost
		st.CostUSD = &c
	}
	if p.tokensSeen {
		in, out := p.in, p.out
		st.InputTokens, st.OutputTokens = &in, &out
	}
	n := p.steps
	st.NumTurns = &n
	if p.first > 0 && p.finished >= p.first {
		d := p.finished - p.first
		st.DurationMS = &d
	}
	e := Event{Type: Done, SessionID: p.sessionID, Stats: st}
	return e, true
}

// openCodeError is an error line's message: error.data.message, else
// error.name, else the raw error.
func openCodeError(raw []byte) string {
	var name, msg string
	if len(raw) > 0 && raw[0] == '{' {
		r := reader{b: raw}
		first := true
		for r.object(&first) {
			switch string(r.key()) {
			case "name":
				name, _ = r.str()
			case "data":
				msg = messageOf(r.raw())
			case "message":
				if s, _ := r.str(); msg == "" {
					msg = s
				}
			default:
				r.skip()
			}
		}
	} else {
		msg = errorText(raw)
	}
	switch {
	case msg != "":
		return msg
	case name != "":
		return name
	}
	return "the agent reported an error"
}
