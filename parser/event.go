// Package parser turns one line of an agent CLI's stdout into normalized
// events. Parsers are pure: no I/O, no goroutines; the little state a run
// needs (Cursor's segment accumulator, Claude Code's partial-message
// tracking) lives in a per-run value created with the engine's constructor.
//
// A run's output is read with ReadLines (lines of any length), parsed with
// the Parser from New (or NewClaudeCode, NewCursor), and wrapped in a Guard
// so that the run ends with exactly one terminal event whatever the CLI
// prints. The rules each parser follows are documented on ClaudeCode and
// Cursor; `bot events` shows their output for a recorded stdout.
package parser

import (
	"encoding/json"
	"io"
	"strconv"
	"unicode/utf8"
)

// Type names the kind of a normalized event. The strings are the "type"
// field of the JSON shapes that `bot events` and the HTTP API print.
type Type string

const (
	Text       Type = "text"
	ToolCall   Type = "tool_call"
	ToolResult Type = "tool_result"
	Warning    Type = "warning"
	Done       Type = "done"
	Error      Type = "error"
	// PermissionRequest: the run asks before a tool runs and waits for the
	// answer (engine.Run.Respond). Never terminal.
	PermissionRequest Type = "permission_request"
	// File is a file the agent handed back (left in outbox/ of its working
	// directory), sent by golem before the terminal event to a message's
	// Sink. No parser emits it.
	File Type = "file"
	// PermissionDecision: a permission request was decided. No parser
	// emits it; core does, for streams (the HTTP API) to show the outcome.
	PermissionDecision Type = "permission_decision"
	// UserMessage: the CLI took in one user message written to its stdin
	// (the prompt, or a message steered into the run) — Claude Code's
	// replay of it with --replay-user-messages. Never terminal; the engine
	// counts them to tell the run's last result line from one that more
	// messages follow, and does not pass them on.
	UserMessage Type = "user_message"
)

// Reason says why a run ended with an Error event. Code branches on it,
// never on the error's text: a CLI whose own error message is "stopped"
// still failed. The names are the "reason" field of the JSON shape and fit
// the outcome label of metrics (done, error, stopped, timed_out,
// interrupted), crashed being a kind of error.
type Reason string

const (
	// Failed is the zero value: the CLI reported the error itself (an
	// error result line), or golem could not start it or refused the
	// message. Parsers' error events carry it without saying so.
	Failed Reason = ""
	// Crashed: the CLI's output ended without a result line (the process
	// died, or exited without saying how it went).
	Crashed Reason = "crashed"
	// Stopped: the run was cancelled (/stop, a shutdown), or a message
	// was stopped before its turn began.
	Stopped Reason = "stopped"
	// TimedOut: the turn's time limit passed and the agent was stopped.
	TimedOut Reason = "timed_out"
	// Interrupted: golem shut down or restarted before the turn ran or
	// finished.
	Interrupted Reason = "interrupted"
)

// String returns the reason's name, "error" for Failed.
func (r Reason) String() string {
	if r == Failed {
		return "error"
	}
	return string(r)
}

// Event is one normalized event. Which fields are meaningful depends on Type:
//
//	text:        Content
//	tool_call:   ID, Name, Args
//	tool_result: ID, Content, IsError
//	warning:     Message
//	done:        SessionID, Stats? (DurationMS?, CostUSD?, NumTurns?, InputTokens?, OutputTokens?)
//	error:       Message, Reason?
//	file:        Name, File (Size, Path (not in JSON), URL?)
//	permission_request:  ID, Name (the tool), Args, Permission? (Suggestions?, Questions?)
//	permission_decision: ID, Permission (Decision: "allow", "allow_session", "deny")
//	user_message: nothing
//
// The fields of the rare kinds sit behind pointers, so that the text and
// tool events a run streams by the thousand stay small; nil is absent.
type Event struct {
	Type    Type
	Content string
	ID      string
	Name    string
	Args    json.RawMessage // a JSON object; nil marshals as {}
	Message string
	// SessionID is the session a done event's run can be resumed with;
	// on an error with Reason Stopped or TimedOut, the session the run was
	// in when the CLI had said so (Claude Code's and Cursor's system/init;
	// see SessionTeller), else "". Not part of an error's JSON shape.
	SessionID string
	// Reason is why an Error event ended the run; Failed (the zero value)
	// for the CLI's own error. Message is what to show; never branch on it.
	Reason Reason

	// Stats is what a done event reports about the run; nil when the CLI
	// reports none of it.
	Stats *RunStats
	// File describes a file event's file: set on every one (core's, the
	// HTTP API's); a bare one marshals as size 0.
	File *FileInfo
	// Permission is a permission request's proposals and questions (nil
	// when it has neither; read them with Suggestions and Questions) or a
	// permission decision's outcome (set on every one).
	Permission *Permission

	IsError bool
	// SessionReset is set on the warning an engine emits when it could not
	// resume the stored session and started a new one: the caller must
	// forget the old session id. Not part of the JSON shape.
	SessionReset bool
}

// RunStats are a done event's figures about the run, each nil when the CLI
// does not report it: a zero duration is a value, nil is absent.
type RunStats struct {
	DurationMS *int64
	CostUSD    *float64
	NumTurns   *int
	// Token usage of the whole run where the CLI reports it: input tokens
	// (cached ones included) and output tokens (reasoning included).
	InputTokens, OutputTokens *int64
}

// FileInfo describes the file of a File event: its length in bytes, where
// its bytes are on this machine, and where a client of the HTTP API
// fetches them (set by that API; the path never leaves the machine).
type FileInfo struct {
	Size int64
	Path string
	URL  string
	// Open, when set, is how to read the bytes at Path (core's File.Open,
	// which follows no symlink the agent put there); nil opens Path.
	Open func() (io.ReadCloser, error) `json:"-"`
}

// Permission holds what only permission events carry.
type Permission struct {
	// Suggestions are the permission updates the CLI proposes with a
	// permission request (a JSON array, sent back as they are to allow
	// for the session); nil when it proposes none.
	Suggestions json.RawMessage
	// Questions are an AskUserQuestion request's questions and options.
	Questions []Question
	// Decision is a permission_decision's outcome.
	Decision string
}

// Questions returns a permission request's questions, nil when it has none.
func (e Event) Questions() []Question {
	if e.Permission == nil {
		return nil
	}
	return e.Permission.Questions
}

// Suggestions returns the permission updates a permission request
// proposes, nil when it proposes none.
func (e Event) Suggestions() json.RawMessage {
	if e.Permission == nil {
		return nil
	}
	return e.Permission.Suggestions
}

// stats returns e.Stats, setting it first if it is nil; for parsers
// filling in a done event.
func (e *Event) stats() *RunStats {
	if e.Stats == nil {
		e.Stats = &RunStats{}
	}
	return e.Stats
}

// Terminal reports whether e ends a run. Every run ends with exactly one.
func (e Event) Terminal() bool { return e.Type == Done || e.Type == Error }

// MarshalJSON writes exactly the shape for e.Type, omitting absent optional
// fields, e.g. {"type":"text","content":"hi"}.
func (e Event) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 64+len(e.Content)+len(e.Message)+len(e.Args))
	b = append(b, `{"type":`...)
	b = appendJSONString(b, string(e.Type))
	str := func(key, v string) {
		b = append(b, `,"`...)
		b = append(b, key...)
		b = append(b, `":`...)
		b = appendJSONString(b, v)
	}
	switch e.Type {
	case Text:
		str("content", e.Content)
	case ToolCall:
		str("id", e.ID)
		str("name", e.Name)
		b = append(b, `,"args":`...)
		if len(e.Args) == 0 || !json.Valid(e.Args) {
			b = append(b, `{}`...)
		} else {
			b = append(b, e.Args...)
		}
	case ToolResult:
		str("id", e.ID)
		str("content", e.Content)
		b = append(b, `,"is_error":`...)
		b = strconv.AppendBool(b, e.IsError)
	case Warning:
		str("message", e.Message)
	case Error:
		str("message", e.Message)
		if e.Reason != Failed {
			str("reason", string(e.Reason))
		}
	case Done:
		str("session_id", e.SessionID)
		if e.Stats != nil {
			b = e.Stats.appendJSON(b)
		}
	case File:
		var f FileInfo
		if e.File != nil {
			f = *e.File
		}
		str("name", e.Name)
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, f.Size, 10)
		if f.URL != "" {
			str("url", f.URL)
		}
	case PermissionRequest:
		str("id", e.ID)
		str("tool", e.Name)
		b = append(b, `,"args":`...)
		if len(e.Args) == 0 || !json.Valid(e.Args) {
			b = append(b, `{}`...)
		} else {
			b = append(b, e.Args...)
		}
		if sug := e.Suggestions(); len(sug) > 0 && json.Valid(sug) {
			b = append(b, `,"suggestions":`...)
			b = append(b, sug...)
		}
		if qs := e.Questions(); len(qs) > 0 {
			q, err := json.Marshal(qs)
			if err != nil {
				return nil, err
			}
			b = append(b, `,"questions":`...)
			b = append(b, q...)
		}
	case PermissionDecision:
		var decision string
		if e.Permission != nil {
			decision = e.Permission.Decision
		}
		str("id", e.ID)
		str("decision", decision)
	}
	return append(b, '}'), nil
}

// appendJSON appends the fields of a done event's statistics that are set.
func (s *RunStats) appendJSON(b []byte) []byte {
	if s.DurationMS != nil {
		b = append(b, `,"duration_ms":`...)
		b = strconv.AppendInt(b, *s.DurationMS, 10)
	}
	if s.CostUSD != nil {
		b = append(b, `,"cost_usd":`...)
		b = strconv.AppendFloat(b, *s.CostUSD, 'f', -1, 64)
	}
	if s.NumTurns != nil {
		b = append(b, `,"num_turns":`...)
		b = strconv.AppendInt(b, int64(*s.NumTurns), 10)
	}
	if s.InputTokens != nil {
		b = append(b, `,"input_tokens":`...)
		b = strconv.AppendInt(b, *s.InputTokens, 10)
	}
	if s.OutputTokens != nil {
		b = append(b, `,"output_tokens":`...)
		b = strconv.AppendInt(b, *s.OutputTokens, 10)
	}
	return b
}

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes
// U+FFFD as with encoding/json; unlike encoding/json it leaves <, > and &
// as they are, so `bot events` prints readable text. U+2028 and U+2029 are
// escaped, so the output is also valid JavaScript.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\\ufffd"...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Parser turns one stdout line (without its trailing newline) into zero or
// more events. Parsers never return an error: unknown types, unknown fields
// and non-JSON lines are skipped. A Parser holds per-run state; create one
// per run. Not safe for concurrent use.
//
// The returned slice is the parser's and is reused by the next Parse, so
// that a line costs no slice: use or copy the events before parsing the
// next line. The events themselves are the caller's; nothing in them
// aliases line or the parser.
type Parser interface {
	Parse(line []byte) []Event
}
