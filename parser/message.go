package parser

// This file decodes what both CLIs print alike: the message objects
// (Anthropic's message shape: {id, content: string | [blocks]}), read in the
// same pass as the line, keeping strings in their encoded form until needed;
// and the session id and duration of their system/init and result lines.

// SessionTeller is implemented by parsers that learn a run's session
// before its result line (a system/init line): SessionID returns it, ""
// while unknown. The engine gives it to a run that is stopped, so that the
// conversation's next turn resumes what the stopped one did.
type SessionTeller interface {
	SessionID() string
}

// SessionID implements SessionTeller.
func (p *ClaudeCode) SessionID() string { return p.sessionID }

// SessionID implements SessionTeller.
func (p *Cursor) SessionID() string { return p.sessionID }

// rememberInit keeps the session id of a system/init line in *id, for a
// result line that lacks one.
func rememberInit(id *string, subtype, sessionID jstr) {
	if s := sessionID.String(); subtype.Is("init") && s != "" {
		*id = s
	}
}

// done is the Done of a successful result line: its session id, else
// initID, and its duration_ms exactly as given (absent stays absent, 0 is
// a value).
func done(sessionID jstr, initID string, durationMS []byte) Event {
	e := Event{Type: Done, SessionID: sessionID.String()}
	if e.SessionID == "" {
		e.SessionID = initID
	}
	if n, ok := parseInt(durationMS); ok {
		e.stats().DurationMS = &n
	}
	return e
}

// jstr is a JSON string value still encoded, aliasing the line.
type jstr struct {
	raw []byte // between the quotes
	esc bool   // raw holds escapes
	set bool   // a string was read (not null, not absent)
}

// jstring reads a string value; any other value is skipped and reads as an
// unset jstr.
func (r *reader) jstring() jstr {
	if r.peek() != '"' {
		r.skip()
		return jstr{}
	}
	raw, esc := r.rawString()
	return jstr{raw: raw, esc: esc, set: !r.bad}
}

// String decodes s.
func (s jstr) String() string {
	if s.esc {
		return unescape(s.raw)
	}
	return validString(s.raw)
}

// bytes returns the decoded bytes of s; they alias the line unless s has
// escapes.
func (s jstr) bytes() []byte {
	if s.esc {
		return []byte(unescape(s.raw))
	}
	return s.raw
}

// Is reports whether s decodes to want, without allocating when s has no
// escapes.
func (s jstr) Is(want string) bool {
	if s.esc {
		return unescape(s.raw) == want
	}
	return s.set && string(s.raw) == want
}

// block is one content block of a message, or of a tool_result's content.
type block struct {
	typ           jstr
	text          jstr
	id, name      jstr
	input         []byte // raw JSON
	toolUseID     jstr
	content       jstr    // content when it is a string
	contentBlocks []block // content when it is an array
	isError       bool
}

// message is a decoded message object.
type message struct {
	id      jstr
	content jstr // content when it is a string
	blocks  []block
}

// readMessage reads a message object at r's position into m. Its blocks
// are appended to scratch (a parser's buffer reused from line to line, to
// save an allocation per line).
func readMessage(r *reader, m *message, scratch []block) {
	if r.peek() != '{' { // an unexpected kind of value reads as empty
		r.skip()
		return
	}
	first := true
	for r.object(&first) {
		switch string(r.key()) {
		case "id":
			m.id = r.jstring()
		case "content":
			if r.peek() == '"' {
				m.content = r.jstring()
			} else {
				m.blocks = readBlocks(r, scratch[:0])
			}
		default:
			r.skip()
		}
	}
}

// readBlocks appends the content blocks of an array to blocks; any other
// value is skipped and reads as no blocks.
func readBlocks(r *reader, blocks []block) []block {
	if r.peek() != '[' {
		r.skip()
		return nil
	}
	first := true
	for r.array(&first) {
		if r.peek() != '{' {
			r.skip()
			continue
		}
		blocks = append(blocks, readBlock(r))
	}
	return blocks
}

func readBlock(r *reader) block {
	var b block
	if r.peek() != '{' {
		r.skip()
		return b
	}
	first := true
	for r.object(&first) {
		switch string(r.key()) {
		case "type":
			b.typ = r.jstring()
		case "text":
			b.text = r.jstring()
		case "id":
			b.id = r.jstring()
		case "name":
			b.name = r.jstring()
		case "input":
			b.input = r.raw()
		case "tool_use_id":
			b.toolUseID = r.jstring()
		case "content":
			if r.peek() == '"' {
				b.content = r.jstring()
			} else {
				b.contentBlocks = readBlocks(r, nil)
			}
		case "is_error":
			b.isError = r.boolean()
		default:
			r.skip()
		}
	}
	return b
}

// reuseBlocks returns the buffer for the next line's blocks: used's
// storage, cleared so that it keeps no part of the old line alive, or the
// previous buffer when used has none. Buffers that grew large are dropped.
func reuseBlocks(used, prev []block) []block {
	if cap(used) == 0 {
		return prev
	}
	if cap(used) > 64 {
		return nil
	}
	clear(used)
	return used[:0]
}
