// Command fakeagent stands in for an agent CLI in tests: it parses the real
// CLI's flags and answers in the real CLI's stream-json format, scripted by
// directives in the prompt. See package enginetest for the behaviour and the
// directives; enginetest.Build compiles this program.
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// opts are the command-line flags the agent understands.
type opts struct {
	print, verbose, skipPerms, partial bool   // Claude Code
	replay                             bool   // Claude Code: --replay-user-messages
	streamPartial, force, trust, mcps  bool   // Cursor
	format, resume, model, apiKey      string // both (apiKey: Cursor)
	sandbox, inputFormat, permTool     string
	permMode                           string
	prompt                             string
	hasPrompt                          bool
}

func main() {
	launched := time.Now()
	cursor := filepath.Base(os.Args[0]) == "agent" || os.Getenv("FAKE_AGENT_FORMAT") == "cursor"
	o, err := parseFlags(os.Args[1:], cursor)
	if err != nil {
		fail(1, "error: "+err.Error())
	}
	if !o.print {
		fail(1, "fake agent: only print mode (-p) is supported")
	}
	if o.format != "stream-json" {
		fail(1, "fake agent: only --output-format stream-json is supported")
	}
	if !cursor && !o.verbose {
		fail(1, "Error: When using --print, --output-format=stream-json requires --verbose")
	}
	if o.inputFormat == "stream-json" {
		if o.hasPrompt {
			fail(1, "Error: --input-format=stream-json takes the prompt on stdin, not as an argument")
		}
		o.prompt, o.hasPrompt = readPrompt(), true
	}
	script, err := parseScript(o.prompt)
	if err != nil {
		fail(2, "fake agent: "+err.Error())
	}

	a := &agent{cursor: cursor, o: o, start: time.Now(), newline: true}
	if o.inputFormat == "stream-json" {
		a.in = readInput()
	}
	// FAKE_AGENT_NO_REPLAY: a CLI that takes the flag but echoes nothing.
	a.replay = o.replay && o.inputFormat == "stream-json" && os.Getenv("FAKE_AGENT_NO_REPLAY") == ""
	a.session = o.resume
	if a.session == "" {
		a.session = newUUID()
	}
	childPID := 0
	if script.hang {
		child := exec.Command("sleep", "600")
		child.Stderr = os.Stderr // holds the stderr pipe, as a real tool process would
		if script.setsid {
			// Claude Code runs tool commands so: out of the CLI's process group.
			child.Stderr = nil
			child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		if err := child.Start(); err != nil {
			fail(1, "fake agent: start sleep child: "+err.Error())
		}
		childPID = child.Process.Pid
	}
	logInvocation(a.session, childPID, o.prompt, launched)

	if strings.HasPrefix(o.resume, "unknown") {
		a.failResume()
	}
	a.run(script)
}

// parseFlags parses args as the real CLI would; unknown flags fail.
func parseFlags(args []string, cursor bool) (opts, error) {
	var o opts
	bools := map[string]*bool{"-p": &o.print, "--print": &o.print}
	values := map[string]*string{"--output-format": &o.format, "--resume": &o.resume, "--model": &o.model}
	if cursor {
		bools["--stream-partial-output"] = &o.streamPartial
		bools["--force"] = &o.force
		bools["--trust"] = &o.trust
		bools["--approve-mcps"] = &o.mcps
		values["--api-key"] = &o.apiKey
		values["--sandbox"] = &o.sandbox
	} else {
		bools["--verbose"] = &o.verbose
		bools["--dangerously-skip-permissions"] = &o.skipPerms
		bools["--include-partial-messages"] = &o.partial
		bools["--replay-user-messages"] = &o.replay
		values["-r"] = &o.resume
		values["--input-format"] = &o.inputFormat
		values["--permission-prompt-tool"] = &o.permTool
		values["--permission-mode"] = &o.permMode
		values["--max-turns"] = new(string)
		values["--append-system-prompt"] = new(string)
		values["--add-dir"] = new(string)
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			for _, rest := range args[i+1:] {
				if err := o.setPrompt(rest); err != nil {
					return o, err
				}
			}
			break
		}
		if !strings.HasPrefix(arg, "-") {
			if err := o.setPrompt(arg); err != nil {
				return o, err
			}
			continue
		}
		name, value, hasValue := strings.Cut(arg, "=")
		if b, ok := bools[name]; ok && !hasValue {
			*b = true
			continue
		}
		s, ok := values[name]
		if !ok {
			return o, fmt.Errorf("unknown option '%s'", arg)
		}
		if !hasValue {
			if i+1 >= len(args) {
				return o, fmt.Errorf("option '%s' argument missing", name)
			}
			i++
			value = args[i]
		}
		*s = value
	}
	return o, nil
}

func (o *opts) setPrompt(p string) error {
	if o.hasPrompt {
		return fmt.Errorf("too many arguments: %q", p)
	}
	o.prompt, o.hasPrompt = p, true
	return nil
}

// directive is one "!name args" line of the prompt.
type directive struct{ name, arg string }

// script is the prompt split into directives and the text to echo.
type script struct {
	steps  []directive
	text   string // the non-directive lines, trimmed
	hang   bool
	setsid bool // the hang child runs in a session of its own
}

var known = map[string]bool{
	"sleep": true, "text": true, "tool": true, "hang": true, "crash": true, "garbage": true,
	"huge": true, "error": true, "fence": true, "delta-rate": true, "stamp": true, "write": true, "ask": true,
	"sleep-until": true, "no-result": true, "exit": true, "no-newline": true, "stderr": true, "ignore-term": true,
	"linger": true, "await": true, "sh": true,
}

func parseScript(prompt string) (script, error) {
	var s script
	var text []string
	for _, line := range strings.Split(prompt, "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "!") {
			text = append(text, line)
			continue
		}
		name, arg, _ := strings.Cut(t[1:], " ")
		if !known[name] {
			return s, fmt.Errorf("unknown directive %q", t)
		}
		s.steps = append(s.steps, directive{name, strings.TrimSpace(arg)})
		if name == "hang" {
			s.hang, s.setsid = true, strings.TrimSpace(arg) == "setsid"
		}
	}
	s.text = strings.TrimSpace(strings.Join(text, "\n"))
	if s.text != "" || len(s.steps) == 0 {
		s.steps = append(s.steps, directive{name: "echo", arg: s.text})
	}
	return s, nil
}

// agent writes one run's output.
type agent struct {
	cursor   bool
	o        opts
	session  string
	start    time.Time
	answer   strings.Builder // all text said, for the result line
	turns    int
	exitCode int
	newline  bool // end the result line with '\n'
	linger   time.Duration
	seq      int
	// sessionAllowed: an answer carried updatedPermissions, so later
	// requests of this run are not asked.
	sessionAllowed bool
	in             *input // stdin after the prompt (--input-format stream-json)
	replay         bool   // echo each user message taken in
}

// run runs the prompt's turn, then, with --input-format stream-json, a
// turn for each user message still queued after it, until stdin ends.
func (a *agent) run(s script) {
	a.turn(s, a.o.prompt)
	if a.in == nil || !a.newline {
		// A last line without newline is read only at EOF: that run just
		// exits.
		time.Sleep(a.linger)
		os.Exit(a.exitCode)
	}
	// The real CLI waits for more input until stdin closes, and answers
	// each message that arrives in a turn of its own.
	for a.in.wait(a.in.arrivals()) {
		for _, text := range a.in.take() {
			next, err := parseScript(text)
			if err != nil {
				fail(2, "fake agent: "+err.Error())
			}
			a.answer.Reset()
			a.turns, a.start = 0, time.Now()
			a.turn(next, text)
		}
	}
	time.Sleep(a.linger)
	os.Exit(a.exitCode)
}

// took echoes a user message taken in, as --replay-user-messages does.
func (a *agent) took(text string) {
	if a.replay {
		a.emit(obj{"type": "user", "message": obj{"role": "user", "content": text}, "session_id": a.session,
			"parent_tool_use_id": nil, "uuid": newUUID(), "isReplay": true})
	}
}

// turn runs one turn: init, the prompt taken in, the steps, the result.
// Between two steps (as between two model calls of the real CLI) it takes
// in the user messages queued meanwhile and answers "heard: TEXT" for each.
func (a *agent) turn(s script, prompt string) {
	a.init()
	seen := 0 // messages that arrived before this turn, or the last !await
	if a.in != nil {
		a.took(prompt)
		seen = a.in.arrivals()
	}
	for i, d := range s.steps {
		if i > 0 {
			for _, text := range a.in.take() {
				a.took(text)
				a.say("heard: "+text, 1, 0)
			}
		}
		switch d.name {
		case "await":
			if a.in == nil {
				fail(2, "fake agent: !await needs --input-format stream-json")
			}
			a.in.wait(seen)
			seen = a.in.arrivals()
		case "echo":
			a.say("echo: "+d.arg, 4, 5*time.Millisecond)
		case "sleep":
			time.Sleep(duration(d.arg))
		case "text":
			a.say(filler(atoi(d.arg)), atoi(d.arg)/20+1, 0)
		case "delta-rate":
			every, rest, _ := strings.Cut(d.arg, " ")
			n, size, ok := strings.Cut(rest, " ")
			if !ok {
				size = "1"
			}
			a.say(strings.Repeat("x", atoi(n)*atoi(size)), atoi(n), duration(every))
		case "sleep-until":
			time.Sleep(time.Until(time.Unix(0, int64(atoi(d.arg)))))
		case "fence":
			a.say(fenced, 40, 0)
		case "huge":
			a.say(strings.Repeat("h", atoi(d.arg)), 1, 0)
		case "stamp":
			a.say("stamp:"+strconv.FormatInt(time.Now().UnixNano(), 10), 1, 0)
		case "write":
			path, text, _ := strings.Cut(d.arg, " ")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				fail(1, "fake agent: "+err.Error())
			}
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				fail(1, "fake agent: "+err.Error())
			}
		case "tool":
			a.tool(d.arg)
		case "sh":
			a.sh(d.arg)
		case "ask":
			a.ask(d.arg)
		case "garbage":
			a.garbage()
		case "stderr":
			fmt.Fprintln(os.Stderr, d.arg)
		case "crash":
			fmt.Fprintln(os.Stderr, "fake agent: something went badly wrong")
			fmt.Fprintf(os.Stderr, "fake agent: crashing with exit code %s\n", d.arg)
			os.Exit(atoi(d.arg))
		case "error":
			a.result(d.arg, nil)
			os.Exit(1)
		case "no-result":
			os.Exit(0)
		case "exit":
			a.exitCode = atoi(d.arg)
		case "no-newline":
			a.newline = false
		case "linger":
			a.linger = duration(d.arg)
		case "ignore-term":
			signal.Ignore(syscall.SIGTERM)
		case "hang":
			// Not select{}: with no other goroutine the runtime would
			// call that a deadlock and crash; a sleeping one is waiting.
			for {
				time.Sleep(time.Hour)
			}
		}
	}
	a.result("", nil)
}

// failResume fails like the real CLI given an unknown session id.
func (a *agent) failResume() {
	msg := "No conversation found with session ID: " + a.o.resume
	fmt.Fprintln(os.Stderr, msg)
	a.result("", []string{msg})
	os.Exit(1)
}

func (a *agent) init() {
	model := a.o.model
	if model == "" {
		model = "fake-model"
	}
	cwd, _ := os.Getwd()
	if a.cursor {
		a.emit(obj{"type": "system", "subtype": "init", "apiKeySource": "login", "cwd": cwd,
			"session_id": a.session, "model": model, "permissionMode": "default"})
		a.emit(obj{"type": "user", "message": obj{"role": "user",
			"content": []obj{{"type": "text", "text": a.o.prompt}}}, "session_id": a.session})
		return
	}
	a.emit(obj{"type": "system", "subtype": "init", "cwd": cwd, "session_id": a.session,
		"model": model, "tools": []string{"Bash", "Read", "Edit"}, "permissionMode": "bypassPermissions"})
}

// say writes text as an answer segment in n deltas (when the CLI's partial
// output flag is on) with pause between them, then the whole block.
func (a *agent) say(text string, n int, pause time.Duration) {
	a.answer.WriteString(text)
	a.turns = max(a.turns, 1)
	chunks := split(text, n)
	if a.cursor {
		start := time.Now()
		for i, c := range chunks {
			if !a.o.streamPartial {
				break
			}
			pace(start, i, pause)
			a.emit(a.cursorText(c, true))
		}
		a.emit(a.cursorText(text, false)) // the segment's summary (or, without partial output, its only line)
		return
	}
	id := a.nextID("msg_")
	if a.o.partial {
		a.stream(obj{"type": "message_start", "message": obj{"id": id, "type": "message", "role": "assistant", "content": []obj{}}})
		a.stream(obj{"type": "content_block_start", "index": 0, "content_block": obj{"type": "text", "text": ""}})
		start := time.Now()
		for i, c := range chunks {
			pace(start, i, pause)
			a.stream(obj{"type": "content_block_delta", "index": 0, "delta": obj{"type": "text_delta", "text": c}})
		}
	}
	a.emit(a.assistant(id, obj{"type": "text", "text": text}))
	if a.o.partial {
		a.stream(obj{"type": "content_block_stop", "index": 0})
		a.stream(obj{"type": "message_delta", "delta": obj{"stop_reason": "end_turn"}})
		a.stream(obj{"type": "message_stop"})
	}
}

// pace waits until the i-th of lines written every pause since start is
// due: a schedule, not a sleep per line, so that lines come pause apart on
// average however long each sleep and write take (a late line is written
// at once), as a CLI relaying a steady stream does.
func pace(start time.Time, i int, pause time.Duration) {
	if i > 0 && pause > 0 {
		time.Sleep(time.Until(start.Add(time.Duration(i) * pause)))
	}
}

// tool writes a tool use ("Name {json args}") and its result.
func (a *agent) tool(arg string) {
	name, raw, _ := strings.Cut(arg, " ")
	input := json.RawMessage(strings.TrimSpace(raw))
	if !json.Valid(input) {
		input = json.RawMessage(`{}`)
	}
	a.toolUse(name, input, "fake output of "+name, false)
}

// sh runs command with /bin/sh in the working directory as a Bash tool
// use whose result is what it printed (stdout and stderr), an error when
// it exits non-zero. The tool use is printed before the command runs and
// the result after, as a real CLI prints them.
func (a *agent) sh(command string) {
	input, _ := json.Marshal(obj{"command": command})
	end := a.toolStart("Bash", input)
	out, err := exec.Command("/bin/sh", "-c", command).CombinedOutput()
	end(string(out), err != nil)
}

// toolUse prints a tool use of name with input and its result output.
func (a *agent) toolUse(name string, input json.RawMessage, output string, isErr bool) {
	a.toolStart(name, input)(output, isErr)
}

// toolStart prints a tool use of name with input and returns the func
// that prints its result.
func (a *agent) toolStart(name string, input json.RawMessage) (result func(output string, isErr bool)) {
	a.turns++
	if a.cursor {
		key := strings.ToLower(name[:1]) + name[1:] + "ToolCall"
		if name == "Bash" {
			key = "shellToolCall"
		}
		id := a.nextID("call_")
		a.emit(obj{"type": "tool_call", "subtype": "started", "call_id": id,
			"tool_call": obj{key: obj{"args": input}}, "session_id": a.session})
		return func(output string, isErr bool) {
			a.emit(obj{"type": "tool_call", "subtype": "completed", "call_id": id, "tool_call": obj{key: obj{
				"args": input, "result": obj{"success": obj{"exitCode": map[bool]int{false: 0, true: 1}[isErr], "stdout": output, "stderr": ""}}}},
				"session_id": a.session})
		}
	}
	id := a.nextID("toolu_")
	a.emit(a.assistant(a.nextID("msg_"), obj{"type": "tool_use", "id": id, "name": name, "input": input}))
	return func(output string, isErr bool) {
		a.emit(obj{"type": "user", "message": obj{"role": "user", "content": []obj{{
			"tool_use_id": id, "type": "tool_result", "content": output, "is_error": isErr}}},
			"session_id": a.session, "tool_use_result": obj{"stdout": output, "stderr": "", "interrupted": false}})
	}
}

// garbage writes lines a parser must skip.
func (a *agent) garbage() {
	for _, l := range []string{
		"this is not JSON",
		`{"type":"assistant","message":{"content":[{"type":"text","te`,
		"",
		"\x1b[31mred alert\x1b[0m",
		`{"type":"mystery","payload":[1,2,3]}`,
		`[1,2,3]`,
		`null`,
		"\xff\xfe binary \x00 bytes",
	} {
		os.Stdout.WriteString(l + "\n")
	}
}

// result writes the final line: success, an is_error result with text
// errText, or (Claude Code) an error_during_execution result with errs.
func (a *agent) result(errText string, errs []string) {
	ms := time.Since(a.start).Milliseconds()
	isErr := errText != "" || len(errs) > 0
	var r obj
	switch {
	case a.cursor && isErr:
		r = obj{"type": "result", "subtype": "error", "is_error": true,
			"result": errText + strings.Join(errs, "; "), "session_id": a.session}
	case a.cursor:
		r = obj{"type": "result", "subtype": "success", "duration_ms": ms, "duration_api_ms": ms,
			"is_error": false, "result": a.answer.String(), "session_id": a.session, "request_id": newUUID()}
	case len(errs) > 0:
		r = obj{"type": "result", "subtype": "error_during_execution", "duration_ms": 0, "duration_api_ms": 0,
			"is_error": true, "num_turns": 0, "session_id": a.session, "total_cost_usd": 0, "errors": errs}
	default:
		result := a.answer.String()
		if isErr {
			result = errText
		}
		r = obj{"type": "result", "subtype": "success", "is_error": isErr, "duration_ms": ms,
			"duration_api_ms": ms, "num_turns": max(a.turns, 1), "result": result, "session_id": a.session,
			"total_cost_usd": 0.0012, "usage": obj{"input_tokens": 10, "output_tokens": 20}}
	}
	b := marshal(r)
	if a.newline {
		b = append(b, '\n')
	}
	os.Stdout.Write(b)
}

type obj = map[string]any

// cursorText is an assistant line: a delta carries timestamp_ms, a
// segment's summary carries model_call_id instead, as Cursor's do.
func (a *agent) cursorText(text string, delta bool) obj {
	line := obj{"type": "assistant", "message": obj{"role": "assistant",
		"content": []obj{{"type": "text", "text": text}}}, "session_id": a.session}
	if delta {
		line["timestamp_ms"] = time.Now().UnixMilli()
	} else {
		line["model_call_id"] = a.nextID("mc_")
	}
	return line
}

func (a *agent) assistant(id string, block obj) obj {
	return obj{"type": "assistant", "message": obj{"id": id, "type": "message", "role": "assistant",
		"model": "fake-model", "content": []obj{block}}, "session_id": a.session}
}

func (a *agent) stream(event obj) {
	a.emit(obj{"type": "stream_event", "event": event, "session_id": a.session})
}

// emit writes v as one line with a single write, as the real CLIs do.
func (a *agent) emit(v obj) {
	os.Stdout.Write(append(marshal(v), '\n'))
}

// marshal encodes v as the real CLIs do: "type" first, no HTML escaping.
func marshal(v obj) []byte {
	typ, _ := v["type"].(string)
	rest := make(obj, len(v))
	for k, x := range v {
		if k != "type" {
			rest[k] = x
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(rest)
	body := bytes.TrimSpace(buf.Bytes())
	b := []byte(`{"type":` + strconv.Quote(typ))
	if len(body) > 2 {
		b = append(b, ',')
	}
	return append(b, body[1:]...)
}

func (a *agent) nextID(prefix string) string {
	a.seq++
	return fmt.Sprintf("%s%03d", prefix, a.seq)
}

// logInvocation appends one JSON line about this invocation to $FAKE_AGENT_LOG.
func logInvocation(session string, childPID int, prompt string, launched time.Time) {
	path := os.Getenv("FAKE_AGENT_LOG")
	if path == "" {
		return
	}
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if k == "ANTHROPIC_API_KEY" || k == "CURSOR_API_KEY" || k == "CLAUDECODE" || strings.HasPrefix(k, "GOLEM_TEST_") {
			env[k] = v
		}
	}
	cwd, _ := os.Getwd()
	line, _ := json.Marshal(obj{"argv": os.Args, "cwd": cwd, "env": env, "environ": os.Environ(), "pid": os.Getpid(),
		"session_id": session, "child_pid": childPID, "prompt": prompt, "started_ns": launched.UnixNano()})
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fail(1, "fake agent: open log: "+err.Error())
	}
	f.Write(append(line, '\n'))
	f.Close()
}

func fail(code int, msg string) {
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(code)
}

func atoi(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		fail(2, fmt.Sprintf("fake agent: bad number %q", s))
	}
	return n
}

func duration(s string) time.Duration {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		fail(2, fmt.Sprintf("fake agent: bad duration %q", s))
	}
	return d
}

// split cuts s into at most n pieces of about equal length, on rune boundaries.
func split(s string, n int) []string {
	r := []rune(s)
	n = max(1, min(n, len(r)))
	size := (len(r) + n - 1) / n
	var out []string
	for len(r) > 0 {
		k := min(size, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	if len(out) == 0 {
		out = []string{""}
	}
	return out
}

// filler returns n characters of words.
func filler(n int) string {
	const words = "the quick brown fox jumps over the lazy dog "
	return strings.Repeat(words, n/len(words)+1)[:n]
}

func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// fenced is a long Markdown answer (about 5,000 characters) whose code
// fence is longer than most chat platforms' message limit.
var fenced = func() string {
	var b strings.Builder
	b.WriteString("Here is the change you asked for. It adds small helpers and a table of greetings.\n\n")
	b.WriteString("```go\npackage main\n\nimport \"fmt\"\n\n")
	for i := range 40 {
		fmt.Fprintf(&b, "// greet%02d returns greeting number %d for name.\nfunc greet%02d(name string) string {\n\treturn fmt.Sprintf(\"hello %d, %%s\", name)\n}\n\n", i, i, i, i)
	}
	b.WriteString("func main() {\n\tfmt.Println(greet00(\"golem\"))\n}\n```\n\n")
	b.WriteString("Run it with `go run .`; it prints **one** line. Tell me if you want a test for it as well.")
	return b.String()
}()
