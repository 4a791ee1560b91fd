package core

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/store"
)

// Command is one of the chat commands golem answers itself, as every
// platform's menu shows it: Telegram's setMyCommands, Discord's
// application commands and the /help answer (Slack's /golem help) are all
// built from Commands, so a command added here is in every menu.
type Command struct {
	Name string // without the slash, lowercase: "model"
	// Summary is a plain line for a menu, at most 100 characters
	// (Discord's limit for a command's description).
	Summary string
	// Help is the /help line, in markdown.
	Help string
	// Args are what may follow the name, in order.
	Args []Arg
}

// Arg is one argument of a Command, as Discord's options show it.
type Arg struct {
	Name     string // lowercase, no spaces: "name", "id"
	Summary  string // plain, at most 100 characters
	Required bool
}

// commandList is golem's commands in the order menus list them.
var commandList = []Command{
	{Name: "new", Summary: "Forget this conversation's agent session; the next message starts afresh",
		Help: "forget this conversation's agent session; the next message starts afresh"},
	{Name: "stop", Summary: "Stop the running answer now", Help: "stop the running answer now (and drop waiting messages)"},
	{Name: "status", Summary: "Show engine, model, session and whether an answer is running",
		Help: "show engine, model, session and whether an answer is running"},
	{Name: "engine", Summary: "Show or switch the agent CLI (a switch starts a new session)",
		Help: "`/engine NAME` switch the agent CLI (starts a new session)",
		Args: []Arg{{Name: "name", Summary: "Engine name, e.g. claude-code or cursor"}}},
	{Name: "model", Summary: "Show or choose the model; 'default' resets",
		Help: "`/model NAME` choose the model; `/model default` resets",
		Args: []Arg{{Name: "name", Summary: "Model name, e.g. sonnet"}}},
	{Name: "allow", Summary: "Allow what the agent asks, by the id its question shows",
		Help: "`/allow ID` allow what the agent asks (`/allow ID session`: for the rest of the session)",
		Args: []Arg{{Name: "id", Summary: "The id the question shows", Required: true},
			{Name: "for", Summary: "'session': allow it for the rest of the session"}}},
	{Name: "deny", Summary: "Refuse what the agent asks, by the id its question shows",
		Help: "`/deny ID` refuse what the agent asks (`/deny ID reason`: and tell it why)",
		Args: []Arg{{Name: "id", Summary: "The id the question shows", Required: true},
			{Name: "reason", Summary: "Why, for the agent"}}},
	{Name: "diff", Summary: "This conversation's changes since its branch started",
		Help: "this conversation's changes since its branch started (with `isolation: worktree`)"},
	{Name: "branch", Summary: "This conversation's branch and worktree, and how to fetch it",
		Help: "this conversation's branch and worktree, and how to fetch it"},
	{Name: "pr", Summary: "Open a pull request for this conversation's branch",
		Help: "open a pull request for this conversation's branch (runs `pr_command`)"},
	{Name: "usage", Summary: "What this conversation, you and everyone used today and this month",
		Help: "what this conversation, you and everyone used today and this month"},
	{Name: "sessions", Summary: "The agent sessions of this working directory, also those started in a terminal",
		Help: "the agent sessions of this working directory (also those started in a terminal)"},
	{Name: "resume", Summary: "Continue an agent session of this working directory here",
		Help: "`/resume ID` continue one of `/sessions` here",
		Args: []Arg{{Name: "id", Summary: "The session id, or its first characters (4 or more)", Required: true}}},
	{Name: "session", Summary: "The command that continues this conversation in a terminal",
		Help: "the command that continues this conversation in a terminal"},
	{Name: "every", Summary: "Run a prompt here on a schedule: cron in quotes, @daily or @every 2h",
		Help: "`/every \"0 9 * * 1-5\" PROMPT` run PROMPT here on a schedule (or `@daily`, `@every 2h`; `TZ=Europe/Berlin` first)",
		Args: []Arg{{Name: "schedule", Summary: "0 9 * * 1-5, @daily or @every 2h (TZ=Zone first)", Required: true},
			{Name: "prompt", Summary: "What the agent is asked each time", Required: true}}},
	{Name: "at", Summary: "Run a prompt here once: at 2026-12-24 09:00, at 09:00 or in 2h",
		Help: "`/at 09:00 PROMPT` run PROMPT here once (`2026-12-24 09:00`, `09:00`, `in 2h`)",
		Args: []Arg{{Name: "time", Summary: "2026-12-24 09:00, 09:00 or in 2h (TZ=Zone first)", Required: true},
			{Name: "prompt", Summary: "What the agent is asked", Required: true}}},
	{Name: "schedules", Summary: "This conversation's schedules: next run, last run, paused",
		Help: "this conversation's schedules, their next and last runs"},
	{Name: "unschedule", Summary: "Delete a schedule", Help: "`/unschedule ID` delete a schedule",
		Args: []Arg{{Name: "id", Summary: "The id /schedules shows", Required: true}}},
	{Name: "pause", Summary: "Pause a schedule", Help: "`/pause ID` pause a schedule (`/unpause ID` resumes it)",
		Args: []Arg{{Name: "id", Summary: "The id /schedules shows", Required: true}}},
	{Name: "unpause", Summary: "Resume a paused schedule", Help: "`/unpause ID` resume a paused schedule",
		Args: []Arg{{Name: "id", Summary: "The id /schedules shows", Required: true}}},
	{Name: "runnow", Summary: "Run a schedule now, once", Help: "`/runnow ID` run a schedule now, once",
		Args: []Arg{{Name: "id", Summary: "The id /schedules shows", Required: true}}},
	{Name: "help", Summary: "What golem can do", Help: "this list"},
}

// Commands returns golem's chat commands in the order menus list them.
// Telegram's /start, answered like /help, is in no menu.
func Commands() []Command { return slices.Clone(commandList) }

// commands are the names parseCommand knows: the list's and /start.
var commands = func() map[string]bool {
	m := map[string]bool{"start": true}
	for _, c := range commandList {
		m[c.Name] = true
	}
	return m
}()

// parseCommand splits "/name args" when name is one of golem's commands.
func parseCommand(text string) (name, args string, ok bool) {
	if !strings.HasPrefix(text, "/") {
		return "", "", false
	}
	word, rest, _ := strings.Cut(text[1:], " ")
	word = strings.ToLower(word)
	if !commands[word] {
		return "", "", false
	}
	return word, strings.TrimSpace(rest), true
}

// command runs a chat command in Handle: its change to the store is made
// before Handle returns, so it takes effect in the order the messages came;
// its answer is sent by the conversation's answers.
func (d *Dispatcher) command(m Message, name, args string) {
	key := KeyFor(m, d.opts.Scope)
	var text string
	var err error
	switch name {
	case "help", "start":
		text = d.help()
	case "stop":
		d.endRequests(nil, key, store.ApprovalStopped)
		text = d.stop(key)
	case "allow", "deny":
		text = d.answerCommand(m, name, args)
	case "new":
		text, err = d.newSession(key)
	case "status":
		text, err = d.status(m, key)
	case "engine":
		text, err = d.setEngine(m, key, args)
	case "model":
		text, err = d.setModel(m, key, args)
	case "usage":
		text, err = d.usage(m, key)
	case "diff", "branch", "pr":
		d.workCommand(m, name)
		return
	case "sessions":
		d.listSessions(m)
		return
	case "resume":
		text, err = d.resume(m, args)
	case "session":
		text, err = d.terminalSession(m)
	case "every", "at", "schedules", "unschedule", "pause", "unpause", "runnow":
		text = "Schedules are off in this golem."
		if d.opts.Schedules != nil && name == "schedules" {
			d.listSchedules(m, key)
			return
		}
		if (name == "every" || name == "at") && d.poster(m.Platform) == nil && d.prompter(m.Platform) == nil { // nowhere its runs could go
			text = "⚠️ /" + name + ": a schedule's runs are posted where it was set, and nothing can be posted here (" + m.Platform + "); set it in a chat."
		} else if d.opts.Schedules != nil {
			text = d.opts.Schedules.Command(m, key, name, args)
		}
	}
	if err != nil {
		d.log.Error("command", "command", name, "conversation", key, "err", err)
		d.answer(m, "⚠️ **Error:** /"+name+" failed: "+err.Error(), true)
		return
	}
	d.answer(m, text, false)
}

// Overtakes reports whether text is a command that acts on what is running
// now (/stop, and /allow and /deny, which answer its agent), so that a
// Source may hand it to Handle ahead of earlier messages of its chat that
// it is still preparing (attachments still downloading): a user who sends
// /stop expects the agent to stop at once,
// not after a download of several minutes. Every other command keeps its
// place, since its effect depends on the messages before it (/new after a
// message belongs after that message's turn).
func Overtakes(text string) bool {
	name, _, ok := parseCommand(strings.TrimSpace(text))
	return ok && (name == "stop" || name == "allow" || name == "deny")
}

func (d *Dispatcher) help() string {
	var b strings.Builder
	b.WriteString("I pass your messages to a coding agent working on this machine and stream its answer here. Commands:\n")
	for _, c := range commandList {
		fmt.Fprintf(&b, "• `/%s` — %s\n", c.Name, c.Help)
	}
	b.WriteString("Engines: " + strings.Join(d.engineNames(), ", ") + ".")
	return b.String()
}

// stop cancels the conversation's running turn, which kills the agent's
// whole process group; its partial answer stays, marked stopped. Waiting
// messages are dropped; those with a Sink get their terminal event.
func (d *Dispatcher) stop(key store.Key) string {
	c := d.find(key)
	if c == nil {
		return "Nothing is running."
	}
	c.mu.Lock()
	if c.running == nil {
		c.mu.Unlock()
		return "Nothing is running."
	}
	dropped := c.queue
	c.queue = nil
	if s := c.running.steer; s != nil { // not steered in yet: waiting too
		dropped = append(s.inbox, dropped...)
		s.inbox = nil
		s.stops++
	}
	c.running.stop()
	c.mu.Unlock()
	for _, m := range dropped {
		d.dropStopped(m)
	}
	if len(dropped) > 0 {
		return fmt.Sprintf("⏹️ Stopping the running answer; %d waiting messages dropped.", len(dropped))
	}
	return "⏹️ Stopping the running answer."
}

// dropStopped ends m, a message that /stop dropped before it ran: it is
// struck from its mailbox, counted stopped, and a Sink gets its terminal
// event.
func (d *Dispatcher) dropStopped(m Message) {
	d.taken(KeyFor(m, d.opts.Scope), m) // not to be run by the conversation's next owner
	end := parser.Event{Type: parser.Error, Message: "stopped", Reason: parser.Stopped}
	d.measure(m, d.engineFor(m), end, nil, time.Time{})
	if m.Sink != nil {
		m.Sink(end)
	}
}

// bump makes a running turn of key forget its session when it ends.
func (d *Dispatcher) bump(key store.Key) (running bool) {
	c := d.find(key)
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	return c.running != nil
}

func (d *Dispatcher) newSession(key store.Key) (string, error) {
	running := d.bump(key)
	if err := d.opts.Store.ClearSession(key); err != nil {
		return "", err
	}
	text := "🆕 Session forgotten: your next message starts a new conversation with the agent."
	if running {
		text += " (An answer is still running; /stop ends it.)"
	}
	return text, nil
}

func (d *Dispatcher) status(m Message, key store.Key) (string, error) {
	conv, err := d.opts.Store.Conversation(key)
	if err != nil {
		return "", err
	}
	set := d.settings(m, conv)
	model := set.model
	if model == "" {
		model = "the CLI's default"
	}
	session := "none yet"
	if conv.SessionID != "" {
		session = "`" + conv.SessionID + "`"
	}
	state := "idle"
	queued := 0
	if c := d.find(key); c != nil {
		c.mu.Lock()
		if c.running != nil {
			state = "answering for " + time.Since(c.running.started).Round(time.Second).String()
			if s := c.running.steer; s != nil && s.steered > 0 {
				state += fmt.Sprintf(" (messages steered into it: %d)", s.steered)
			}
		}
		queued = len(c.queue)
		c.mu.Unlock()
	}
	avail := ""
	if err := d.lookup(set.engine); err != nil {
		avail = " — not available: " + err.Error()
	}
	replica := "" // a command runs on the replica that owns its conversation
	if d.opts.Cluster != nil {
		replica = "\n**Replica:** " + d.opts.Cluster.Replica()
	}
	return fmt.Sprintf("**Engine:** %s%s\n**Model:** %s\n**Permissions:** %s\n**Session:** %s\n**State:** %s, %d waiting%s",
		set.engine, avail, model, set.mode, session, state, queued, replica) + d.pendingText(key), nil
}

func (d *Dispatcher) engineNames() []string {
	names := make([]string, 0, len(d.opts.Engines))
	for n := range d.opts.Engines {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// lookup reports why the named engine's CLI cannot run, or nil.
func (d *Dispatcher) lookup(name string) error {
	eng := d.opts.Engines[name]
	if eng == nil {
		return fmt.Errorf("engine %s is not configured", name)
	}
	_, err := eng.Lookup()
	return err
}

func (d *Dispatcher) setEngine(m Message, key store.Key, name string) (string, error) {
	conv, err := d.opts.Store.Conversation(key)
	if err != nil {
		return "", err
	}
	names := d.engineNames()
	if name == "" {
		return fmt.Sprintf("This conversation uses **%s**. Available: %s.", d.settings(m, conv).engine, strings.Join(names, ", ")), nil
	}
	if !slices.Contains(names, name) {
		return fmt.Sprintf("Unknown engine %q. Available: %s.", name, strings.Join(names, ", ")), nil
	}
	d.bump(key)
	err = d.opts.Store.UpdateConversation(key, func(c *store.Conversation) bool {
		c.Engine, c.SessionID = name, "" // sessions do not carry over between CLIs
		return true
	})
	if err != nil {
		return "", err
	}
	text := fmt.Sprintf("Engine set to **%s**; the next message starts a new session.", name)
	if err := d.lookup(name); err != nil {
		text += " Note: " + err.Error()
	}
	return text, nil
}

func (d *Dispatcher) setModel(m Message, key store.Key, name string) (string, error) {
	conv, err := d.opts.Store.Conversation(key)
	if err != nil {
		return "", err
	}
	if name == "" {
		set := d.settings(m, conv)
		if set.model == "" {
			return "This conversation uses the CLI's default model. `/model NAME` changes it.", nil
		}
		return fmt.Sprintf("This conversation uses model **%s**.", set.model), nil
	}
	if strings.ContainsAny(name, " \t\n") || len(name) > 100 {
		return "A model name is one word, like `sonnet` or `claude-opus-4-1`.", nil
	}
	model, text := name, fmt.Sprintf("Model set to **%s** for this conversation.", name)
	if name == "default" {
		model, text = "", "Model reset to the default."
	}
	err = d.opts.Store.UpdateConversation(key, func(c *store.Conversation) bool {
		c.Model = model
		return true
	})
	if err != nil {
		return "", err
	}
	return text, nil
}
