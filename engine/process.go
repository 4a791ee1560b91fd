package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/sandbox"
)

// killGrace is how long a process group has between SIGTERM and SIGKILL
// once the run is cancelled, and how long the agent's stdout and stderr may
// stay open (held by a leftover child) after the agent itself exited; time
// the consumer takes to receive events does not count.
const killGrace = 2 * time.Second

// resultGrace is how long a CLI may stay alive after its result line (Claude
// Code writes its session file then) before it is stopped like a cancelled
// run; its answer has been delivered already.
const resultGrace = killGrace

// cli is what an engine tells the shared process layer about its CLI.
type cli struct {
	name           string // config name, e.g. "claude-code"
	defaultCommand string // e.g. "claude"
	installHint    string // how to install the CLI, for ErrNotInstalled
	skillsSubdir   string // e.g. ".claude/skills"
	claudeMD       bool   // generate CLAUDE.md listing the skills
	contextFile    string // else the generated file listing them, e.g. "AGENTS.md" ("" for none)
	cfg            Config
	log            *slog.Logger
	// args returns the CLI's arguments (without argv[0]) for t, the prompt
	// already prepared. The API key never goes there (every local user can
	// read a command line); keyEnv puts it in the environment.
	args func(t Turn, prompt string) []string
	// promptOnStdin: the CLI reads the prompt from stdin when args gets an
	// empty one. Used for prompts too long for one argument, and for every
	// prompt with stdinPrompt (a CLI that mangles a prompt argument).
	promptOnStdin, stdinPrompt bool
	// interactive: the CLI takes stream-json input (Claude Code's
	// --input-format stream-json): args always gets an empty prompt, the
	// prompt goes on stdin as a user message, and stdin stays open for
	// the answers to permission requests until the run's terminal line.
	interactive bool
	// keyEnv returns the environment variables that carry key.
	keyEnv    func(key string) []string
	newParser func() parser.Parser
	// resumeParser, when set, is the parser of a run that resumes session
	// id (for a CLI whose output alone does not say the resume failed).
	resumeParser func(id string) parser.Parser
}

func newCLI(c cli) *cli {
	if c.cfg.Logger == nil {
		c.cfg.Logger = slog.Default()
	}
	c.log = c.cfg.Logger.With("engine", c.name)
	return &c
}

// run implements Engine.Run.
func (c *cli) run(ctx context.Context, t Turn) (*Run, error) {
	path, err := c.lookup()
	if err != nil {
		return nil, err
	}
	if t.Workdir == "" {
		return nil, fmt.Errorf("engine %s: run: no working directory", c.name)
	}
	if fi, err := os.Stat(t.Workdir); err != nil {
		return nil, fmt.Errorf("engine %s: run: working directory: %w", c.name, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("engine %s: run: working directory %s is not a directory", c.name, t.Workdir)
	}
	if c.cfg.SkillsDir != "" {
		contextFile := c.contextFile
		if c.claudeMD {
			contextFile = "CLAUDE.md"
		}
		if err := injectSkills(t.Workdir, c.cfg.SkillsDir, c.skillsSubdir, contextFile, c.log); err != nil {
			c.log.Warn("skill injection failed; running without it", "workdir", t.Workdir, "err", err)
		}
	}
	key := t.APIKey
	if key == "" {
		key = c.cfg.APIKey
	}
	if t.Model == "" {
		t.Model = c.cfg.Model
	}
	spec, ok := Find(c.name)
	if !ok {
		spec = Spec{Name: c.name}
	}
	if err := spec.CheckMode(t.Mode); err != nil {
		return nil, fmt.Errorf("engine %s: run: %w", c.name, err)
	}
	p, err := c.start(ctx, path, t, key)
	if err != nil {
		return nil, err
	}
	r := newRun(ctx, coalesce)
	r.attach(p)
	go c.loop(ctx, r, path, t, key, p)
	return r, nil
}

// loop follows the run's process (and its one resume retry) and ends the
// run with its terminal event. A terminal event that cannot be followed by
// a retry is delivered by follow as soon as it is parsed; the run exits
// once the process is gone.
func (c *cli) loop(ctx context.Context, r *Run, path string, t Turn, key string, p *process) {
	retry := t.SessionID != ""
	final, texted := c.follow(ctx, r, p, retry)
	if retry && final.Type == parser.Error && !texted && ctx.Err() == nil && resumeFailure(final.Message) {
		c.log.Warn("could not resume session; starting a new one", "session", t.SessionID)
		warn := parser.Event{Type: parser.Warning, SessionReset: true,
			Message: fmt.Sprintf("could not resume session %s; starting a new one", t.SessionID)}
		r.push(warn)
		r.flush()
		t.SessionID = ""
		if p, err := c.start(ctx, path, t, key); err != nil {
			final = parser.Event{Type: parser.Error, Message: err.Error()}
		} else {
			r.attach(p)
			final, _ = c.follow(ctx, r, p, false)
		}
	}
	if ctx.Err() != nil && final.Type != parser.Done {
		session := final.SessionID // the session follow learned, if any
		final = stopEvent(ctx)
		final.SessionID = session
	}
	r.finish(final)
}

// resumeFailure reports whether an error message says the session could
// not be resumed, as the spec defines it: it mentions "resume" or "session".
func resumeFailure(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "resume") || strings.Contains(m, "session")
}

// stopEvent is the terminal error of a run whose ctx is done: TimedOut
// when its deadline passed (or its cause wraps context.DeadlineExceeded),
// Stopped otherwise.
func stopEvent(ctx context.Context) parser.Event {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return parser.Event{Type: parser.Error, Message: "timed out", Reason: parser.TimedOut}
	}
	return parser.Event{Type: parser.Error, Message: "stopped", Reason: parser.Stopped}
}

// process is one started CLI process.
type process struct {
	cmd     *exec.Cmd
	stdout  *output  // read end of its stdout
	stderr  *os.File // read end of its stderr
	started time.Time
	parser  parser.Parser      // fresh for this process
	cancel  context.CancelFunc // stops the process (see stop)
	// stdin is the write end of an interactive CLI's stdin, and prompt
	// the user message to write there first; nil otherwise.
	stdin  *os.File
	prompt string

	// jail is the process's sandbox, nil when it runs unsandboxed.
	jail *sandbox.Jail

	// Set by stop, which exec calls (once) when ctx is done; Wait returns
	// only after it did.
	stopAt time.Time
	tree   []procID // the CLI's descendants when it was stopped
}

// stop is the Cmd's Cancel: it sends SIGTERM to the process group and to
// every descendant of the CLI (some live in sessions of their own).
func (p *process) stop() error {
	p.stopAt = time.Now()
	p.tree = descendants(p.cmd.Process.Pid)
	var err error
	if p.jail == nil {
		err = signalGroup(p.cmd, syscall.SIGTERM)
	} // else the group is bwrap alone, which would die at once and take the
	// sandbox with it (SIGKILL): the CLI and its tools below get the
	// SIGTERM, and bwrap ends when the CLI does.
	for _, d := range p.tree {
		d.signal(syscall.SIGTERM)
	}
	return err
}

// reap runs after a stopped CLI has exited: it gives the rest of the tree
// what remains of the grace period to exit, then SIGKILLs the group, the
// survivors and anything they started since.
func (p *process) reap() {
	deadline := p.stopAt.Add(killGrace)
	for time.Now().Before(deadline) && slices.ContainsFunc(p.tree, procID.alive) {
		time.Sleep(20 * time.Millisecond) // not our children: no exit notification to wait on
	}
	signalGroup(p.cmd, syscall.SIGKILL)
	for _, d := range p.tree {
		if d.alive() {
			for _, dd := range descendants(d.pid) {
				dd.signal(syscall.SIGKILL)
			}
			d.signal(syscall.SIGKILL)
		}
	}
}

// start starts the CLI for t in a process group of its own.
func (c *cli) start(ctx context.Context, path string, t Turn, key string) (*process, error) {
	pr := prompt(t)
	var stdin io.Reader
	var inR, inW *os.File
	switch {
	case c.interactive:
		var err error
		if inR, inW, err = os.Pipe(); err != nil {
			return nil, fmt.Errorf("engine %s: start: stdin pipe: %w", c.name, err)
		}
		stdin = inR
	case len(pr) > maxArgPrompt || c.stdinPrompt && c.promptOnStdin:
		if !c.promptOnStdin {
			return nil, fmt.Errorf("engine %s: the prompt is %d bytes; this CLI takes at most %d", c.name, len(pr), maxArgPrompt)
		}
		stdin, pr = strings.NewReader(pr), ""
	}
	argPrompt := pr
	if c.interactive {
		argPrompt = ""
	}
	// The process's own context: cancelled with the run's, or by follow
	// when the CLI outstays resultGrace.
	pctx, cancel := context.WithCancel(ctx)
	args, env := c.args(t, argPrompt), c.env(key)
	var jail *sandbox.Jail
	if t.Sandbox != nil {
		var err error
		if jail, err = c.wrap(t, path, args, env); err != nil {
			cancel()
			if inR != nil {
				inR.Close()
				inW.Close()
			}
			return nil, fmt.Errorf("engine %s: start: the agent's sandbox: %w", c.name, err)
		}
		path, args, env = jail.Path, jail.Args, jail.Env
		c.log.Debug("agent sandboxed", "bwrap", jail.Mounts())
	}
	cmd := exec.CommandContext(pctx, path, args...)
	cmd.Stdin = stdin
	cmd.Dir = t.Workdir
	cmd.Env = env
	cmd.SysProcAttr = agentAttr()
	p := &process{cmd: cmd, parser: c.newParser(), stdin: inW, cancel: cancel, jail: jail}
	if jail != nil {
		cmd.ExtraFiles = jail.Extra
	}
	if t.SessionID != "" && c.resumeParser != nil {
		p.parser = c.resumeParser(t.SessionID)
	}
	if c.interactive {
		p.prompt = pr
	}
	closeStdin := func() { // and release the process's context and sandbox
		cancel()
		if jail != nil {
			jail.Close()
		}
		if inR != nil {
			inR.Close()
			inW.Close()
		}
	}
	cmd.Cancel = p.stop
	cmd.WaitDelay = killGrace // then the CLI gets SIGKILL; reap ends the rest

	outR, outW, err := newOutput(nil) // the run paces it once follow reads it
	if err != nil {
		closeStdin()
		return nil, fmt.Errorf("engine %s: start: stdout pipe: %w", c.name, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.release()
		outW.Close()
		closeStdin()
		return nil, fmt.Errorf("engine %s: start: stderr pipe: %w", c.name, err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	outW.Close() // the child holds its own copies
	errW.Close()
	if jail != nil {
		jail.AfterStart()
	}
	if inR != nil {
		inR.Close()
	}
	if err != nil {
		outR.release()
		errR.Close()
		if inW != nil {
			inW.Close()
		}
		cancel()
		if jail != nil {
			jail.Close()
		}
		return nil, fmt.Errorf("engine %s: start %s: %w", c.name, path, err)
	}
	c.log.Debug("agent started", "pid", cmd.Process.Pid, "workdir", t.Workdir, "resume", t.SessionID != "")
	p.stdout, p.stderr, p.started = outR, errR, time.Now()
	if t.OnStart != nil {
		t.OnStart(groupOf(cmd.Process.Pid))
	}
	return p, nil
}

// follow reads p's output until it ends, hands its events to r, and
// returns its terminal event and whether any answer text was handed over.
// The CLI's own terminal event is delivered as soon as its line is parsed
// unless it is a resume failure that loop retries (mayRetry: the run
// resumes a session); the process then has resultGrace to exit before it is
// stopped. follow returns once the process is gone.
func (c *cli) follow(ctx context.Context, r *Run, p *process, mayRetry bool) (final parser.Event, texted bool) {
	guard := parser.NewGuard(p.parser)
	var parsed *parser.Event
	var turns between            // result lines that steered messages followed
	takenAtResult := 0           // the messages the CLI had taken in at the last of them
	early := make(chan struct{}) // closed when the terminal event went out early
	stdoutDone := make(chan error, 1)
	p.stdout.r = r
	go func() {
		err := parser.ReadLineBatches(p.stdout, func(line []byte) {
			for _, ev := range guard.Parse(line) {
				if ev.Type == parser.UserMessage {
					r.took()
					if w, ok := turns.warning(); ok { // the next turn begins
						r.push(w)
					}
					continue
				}
				if !ev.Terminal() {
					if ev.Type == parser.PermissionRequest {
						r.asked(ev) // before the consumer can answer it
					}
					texted = texted || ev.Type == parser.Text
					r.push(ev)
					continue
				}
				if ev.Type == parser.Error {
					// The message reaches the chat, and a CLI's own error
					// can echo a key as well as its stderr can.
					ev.Message = redact(ev.Message)
				}
				// loop's retry condition; a stop makes it "stopped" there.
				retry := mayRetry && ev.Type == parser.Error && !texted && resumeFailure(ev.Message)
				if !retry && ctx.Err() == nil && !r.endTurn() {
					turns.add(ev) // steered messages follow: the run goes on
					takenAtResult = r.takenCount()
					guard.Continue()
					continue
				}
				r.endInput() // the CLI waits for stdin to close
				if w, ok := turns.warning(); ok {
					r.push(w)
				}
				end := turns.final(ev) // only the terminal event goes to the heap, not each one
				parsed = &end
				if !retry && (end.Type == parser.Done || ctx.Err() == nil) {
					r.push(end)
					close(early)
				}
			}
		}, r.offer)
		p.stdout.release()
		r.handOver() // at the end of the output nothing is worth holding
		stdoutDone <- err
	}()
	tail := newTail(20, 8<<10)
	stderrDone := make(chan struct{})
	go func() {
		io.Copy(tail, p.stderr)
		close(stderrDone)
	}()
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()

	var waitErr error
	select {
	case waitErr = <-exited:
	case <-early:
		grace := time.NewTimer(resultGrace)
		select {
		case waitErr = <-exited:
		case <-grace.C:
			c.log.Debug("agent still running after its result; stopping it", "pid", p.cmd.Process.Pid)
			p.cancel()
			waitErr = <-exited
		}
		grace.Stop()
	}
	r.endInput()
	p.cancel()
	if !p.stopAt.IsZero() {
		p.reap()
	}
	drained := make(chan error, 1)
	go func() {
		<-stderrDone
		drained <- <-stdoutDone
	}()
	grace := time.NewTimer(killGrace)
	defer grace.Stop()
	select {
	case readErr := <-drained:
		if ctx.Err() == nil && readErr != nil {
			c.log.Warn("reading agent output failed", "pid", p.cmd.Process.Pid, "err", readErr)
		}
	case <-grace.C:
		// A leftover child holds the pipes open: end it and stop reading.
		// The reader never waits for the consumer, so what the agent
		// printed has been read.
		c.log.Debug("agent exited but its output stayed open; killing its process group", "pid", p.cmd.Process.Pid)
		signalGroup(p.cmd, syscall.SIGKILL)
		p.stdout.Close()
		p.stderr.Close()
		<-drained
	}
	p.stdout.Close()
	p.stderr.Close()

	reason := exitReason(p.cmd.ProcessState, waitErr)
	exitedOK := p.cmd.ProcessState != nil && p.cmd.ProcessState.Success()
	unjailed := false // the sandbox itself failed: the CLI never ran
	if p.jail != nil {
		unjailed = !p.jail.Started()
		p.jail.Close()
	}
	log := c.log.With("pid", p.cmd.Process.Pid, "exit", reason, "duration_ms", time.Since(p.started).Milliseconds())
	switch {
	case parsed != nil:
		final = *parsed
	case unjailed && ctx.Err() == nil:
		msg := "the agent's sandbox could not start (" + reason + ")"
		if s := tail.String(); s != "" {
			msg += ": " + s
		}
		final = parser.Event{Type: parser.Error, Message: redact(msg), Reason: parser.Failed}
	case ctx.Err() != nil:
		final = stopEvent(ctx)
		if st, ok := p.parser.(parser.SessionTeller); ok {
			final.SessionID = st.SessionID()
		}
	case (turns.done != nil || turns.failure != nil) && exitedOK && r.takenCount() == takenAtResult:
		final, _ = turns.last() // its stdin closed after steerGrace, the CLI said no more
	default: // also a CLI that failed in the turn of a message steered in
		if s := tail.String(); s != "" {
			reason += "; stderr: " + s
		}
		final, _ = guard.End(exitedOK, reason) // a CLI without a result line ends here
		if final.Type == parser.Error {
			// The message reaches the chat; tokens go to no log either.
			final.Message = redact(final.Message)
		}
	}
	r.flush()
	log.Debug("agent ended", "terminal", final.Type, "stderr", redact(tail.String()))
	return final, texted
}

// exitReason describes how a process ended: "exit code 3", "killed by
// signal terminated".
func exitReason(ps *os.ProcessState, waitErr error) string {
	if ps == nil {
		return fmt.Sprint(waitErr)
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by signal " + ws.Signal().String()
	}
	return "exit code " + strconv.Itoa(ps.ExitCode())
}

// signalGroup sends sig to cmd's whole process group.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// env returns the child's environment (see agentEnv).
func (c *cli) env(key string) []string {
	spec, _ := Find(c.name)
	return agentEnv(spec, c.cfg, key, c.keyEnv)
}

// maxArgPrompt is the longest prompt passed as an argument: Linux refuses
// a single argument over 128 KiB (MAX_ARG_STRLEN) with "argument list too
// long".
const maxArgPrompt = 100 << 10

// prompt returns t's prompt as the CLI gets it: attached files named on a
// last line, a leading space when it would look like a flag, and NULs
// (which no process argument can carry) replaced by U+FFFD.
func prompt(t Turn) string {
	p := t.Prompt
	if len(t.Files) > 0 {
		if p != "" {
			p += "\n\n"
		}
		p += "Attached files: " + strings.Join(t.Files, ", ")
	}
	if strings.HasPrefix(p, "-") {
		p = " " + p
	}
	return strings.ReplaceAll(p, "\x00", "\uFFFD")
}
