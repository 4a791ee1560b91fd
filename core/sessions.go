package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/worktree"
)

// The agent sessions a CLI keeps on disk, seen from the chat: /sessions
// lists those of the conversation's working directory, /resume ID makes
// the conversation continue one, /session says how to continue the
// conversation's own in a terminal. The engine reads its CLI's files
// (engine.SessionLister); golem never changes them.

// sessionsShown is how many sessions /sessions lists.
const sessionsShown = 10

// minResumePrefix is the shortest id prefix /resume takes.
const minResumePrefix = 4

// sessionPlace is where the conversation's agent works, for its CLI's
// sessions: its worktree with isolation: worktree (found false before its
// first turn made one), else the configured folder.
func (d *Dispatcher) sessionPlace(m Message, key store.Key, conv store.Conversation) (dir string, found bool, err error) {
	set := d.settings(m, conv)
	if d.opts.Workdirs.Isolation() != worktree.Worktree {
		return set.workdir, set.workdir != "", nil
	}
	ctx, cancel := context.WithTimeout(d.life, 30*time.Second)
	defer cancel()
	w, found, err := d.opts.Workdirs.Find(ctx, set.workdir, key.String())
	return w.Dir, found, err
}

// sessionLister returns the conversation's engine as a SessionLister, or
// the answer that says it has none.
func (d *Dispatcher) sessionLister(m Message, conv store.Conversation) (string, engine.SessionLister, string) {
	name := d.settings(m, conv).engine
	l, ok := d.opts.Engines[name].(engine.SessionLister)
	if !ok {
		return name, nil, fmt.Sprintf("golem cannot list the sessions of **%s**: it does not read that CLI's sessions. "+
			"The README says which engines it can.", name)
	}
	return name, l, ""
}

// listSessions answers /sessions. It reads the CLI's files, so it runs
// off Handle's goroutine and is sent in order with the conversation's
// other short answers. On a platform with buttons each session gets a
// Continue button.
func (d *Dispatcher) listSessions(m Message) {
	key := KeyFor(m, d.opts.Scope)
	queued := d.answers.Add(key, func() (func(), bool) {
		text, choices := d.sessionsText(m, key)
		return func() { d.deliverSessions(m, text, choices) }, true
	})
	if !queued && m.Sink != nil {
		m.Sink(parser.Event{Type: parser.Error, Message: "golem is shutting down", Reason: parser.Interrupted})
	}
}

func (d *Dispatcher) sessionsText(m Message, key store.Key) (string, []Choice) {
	conv, err := d.opts.Store.Conversation(key)
	if err != nil {
		return "⚠️ **Error:** /sessions failed: " + err.Error(), nil
	}
	name, l, no := d.sessionLister(m, conv)
	if l == nil {
		return no, nil
	}
	dir, found, err := d.sessionPlace(m, key, conv)
	if err != nil {
		return "⚠️ **Error:** /sessions failed: " + err.Error(), nil
	}
	if !found {
		return "This conversation has no working directory yet: its first message to the agent makes its worktree.", nil
	}
	start := time.Now()
	all, err := l.Sessions(dir, sessionsShown)
	if err != nil {
		d.log.Error("list sessions", "conversation", key, "engine", name, "err", err)
		return "⚠️ **Error:** /sessions failed: " + err.Error(), nil
	}
	d.log.Debug("sessions listed", "conversation", key, "engine", name, "sessions", len(all), "duration_ms", time.Since(start).Milliseconds())
	if len(all) == 0 {
		return fmt.Sprintf("No %s sessions in `%s` yet.", name, dir), nil
	}
	shown := all[:min(len(all), sessionsShown)]
	var b strings.Builder
	fmt.Fprintf(&b, "**%s sessions in `%s`**, newest first", name, dir)
	if len(all) > len(shown) {
		fmt.Fprintf(&b, " (%d of %d)", len(shown), len(all))
	}
	b.WriteString(":\n")
	var choices []Choice
	for _, s := range shown {
		short := uniquePrefix(s.ID, all)
		fmt.Fprintf(&b, "• `%s` · %s · %s", short, s.Written.UTC().Format("2006-01-02 15:04 UTC"), promptsText(s.Prompts))
		if s.FirstPrompt != "" {
			fmt.Fprintf(&b, " · “%s”", firstLine(s.FirstPrompt, 60))
		}
		if s.ID == conv.SessionID {
			b.WriteString(" ← **this conversation**")
		} else {
			choices = append(choices, Choice{Label: "Continue " + short, Data: "golem:resume:" + s.ID})
		}
		b.WriteByte('\n')
	}
	b.WriteString("`/resume ID` continues one here (its first characters will do); `/session` says how to continue this conversation in a terminal.")
	return b.String(), choices
}

// deliverSessions posts /sessions' answer: with buttons where the platform
// has them, else as text. It runs in the conversation's answers.
func (d *Dispatcher) deliverSessions(m Message, text string, choices []Choice) {
	d.deliverChoices(m, "sessions", text, choices)
}

// deliverChoices posts a command's answer (question id qid) with buttons
// where the platform has them, else as text. It runs in the
// conversation's answers.
func (d *Dispatcher) deliverChoices(m Message, qid, text string, choices []Choice) {
	if m.Sink != nil {
		if strings.HasPrefix(text, "⚠️") {
			m.Sink(parser.Event{Type: parser.Error, Message: text})
			return
		}
		m.Sink(parser.Event{Type: parser.Text, Content: text})
		m.Sink(parser.Event{Type: parser.Done})
		return
	}
	if a, ok := d.poster(m.Platform).(Asker); ok && len(choices) > 0 {
		q := Question{ID: qid, Place: d.place(m), Text: text, Choices: choices}
		_, err := a.Ask(d.life, q)
		if err == nil {
			return
		}
		d.log.Warn("post an answer with buttons", "platform", m.Platform, "question", qid, "err", err)
	}
	d.post(m, text)
}

func promptsText(n int) string {
	switch n {
	case -1:
		return "prompts not counted"
	case 1:
		return "1 prompt"
	}
	return fmt.Sprintf("%d prompts", n)
}

// uniquePrefix is id's first 8 characters, or as many more as tell it
// from the other sessions of all (Codex's ids begin with the time, so
// sessions of the same minute share their first 8).
func uniquePrefix(id string, all []engine.Session) string {
	n := min(len(id), 8)
	for _, o := range all {
		for o.ID != id && n < len(id) && strings.HasPrefix(o.ID, id[:n]) {
			n++
		}
	}
	return id[:n]
}

// shortSession is the first 8 characters of a session id, what /sessions
// shows and /resume takes.
func shortSession(id string) string { return id[:min(len(id), 8)] }

// firstLine is s's first non-empty line, cut to at most n runes.
func firstLine(s string, n int) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			s = l
			break
		}
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '`' {
			return ' '
		}
		return r
	}, strings.TrimSpace(s))
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// errNotYours is why /resume refused a session this conversation never
// had to someone who is not an approver.
var errNotYours = errors.New("only an approver may take a session this conversation did not start")

// resume answers /resume ID (and a Continue button, with who clicking):
// the conversation's next message continues the session whose id starts
// with prefix. An unknown or ambiguous prefix, or a session of another
// working directory, changes nothing.
func (d *Dispatcher) resume(m Message, prefix string) (string, error) {
	key := KeyFor(m, d.opts.Scope)
	prefix = strings.TrimSpace(prefix)
	if prefix == "" {
		return "`/resume ID` continues an agent session of this working directory; `/sessions` lists them.", nil
	}
	if len(prefix) < minResumePrefix || strings.Trim(strings.ToLower(prefix), "0123456789abcdefghijklmnopqrstuvwxyz-_") != "" {
		return fmt.Sprintf("`%s` is not a session id: give at least %d of its first characters, as `/sessions` shows them.",
			firstLine(prefix, 40), minResumePrefix), nil
	}
	prefix = strings.ToLower(prefix)
	conv, err := d.opts.Store.Conversation(key)
	if err != nil {
		return "", err
	}
	name, l, no := d.sessionLister(m, conv)
	if l == nil {
		return no, nil
	}
	dir, found, err := d.sessionPlace(m, key, conv)
	if err != nil {
		return "", err
	}
	var matches, all []engine.Session
	if found {
		if all, err = l.Sessions(dir, 0); err != nil {
			return "", err
		}
		for _, s := range all {
			if strings.HasPrefix(strings.ToLower(s.ID), prefix) {
				matches = append(matches, s)
			}
		}
	}
	switch len(matches) {
	case 0:
		if found {
			if other, err := l.SessionsElsewhere(dir, prefix); err == nil && len(other) > 0 {
				where := "another working directory"
				if other[0].Workdir != "" {
					where = "`" + other[0].Workdir + "`"
				}
				return fmt.Sprintf("Session `%s` belongs to %s, not to this conversation's `%s`: the CLI resumes a session only where it ran. Nothing changed.",
					shortSession(other[0].ID), where, dir), nil
			}
		}
		return fmt.Sprintf("No %s session of this working directory starts with `%s`; `/sessions` lists them. Nothing changed.", name, prefix), nil
	case 1:
	default:
		ids := make([]string, len(matches))
		for i, s := range matches {
			ids[i] = "`" + s.ID[:min(len(s.ID), len(prefix)+4)] + "`"
		}
		slices.Sort(ids)
		return fmt.Sprintf("`%s` is the start of %d sessions (%s): give more of its characters. Nothing changed.",
			prefix, len(matches), strings.Join(ids, ", ")), nil
	}
	s := matches[0]
	short := uniquePrefix(s.ID, all) // OpenCode's ids share their first 8 characters for hours
	if s.ID == conv.SessionID {
		return fmt.Sprintf("This conversation already continues session `%s`.", short), nil
	}
	if !slices.Contains(conv.Sessions, s.ID) && !d.mayTake(m) {
		return "🔒 Session `" + short + "`: " + errNotYours.Error() + " (`permissions.approvers`). Nothing changed.", nil
	}
	running := d.bump(key)
	err = d.opts.Store.UpdateConversation(key, func(c *store.Conversation) bool {
		c.Engine, c.SessionID = name, s.ID
		c.Sessions = store.AddSession(c.Sessions, s.ID)
		return true
	})
	if err != nil {
		return "", err
	}
	d.log.Info("session resumed", "conversation", key, "engine", name, "session", s.ID, "user", m.Platform+":"+m.User)
	text := fmt.Sprintf("▶️ This conversation now continues session `%s`", short)
	if s.FirstPrompt != "" {
		text += " (“" + firstLine(s.FirstPrompt, 60) + "”)"
	}
	text += ": your next message goes on from there."
	if running {
		text += " (An answer is still running in the previous session; /stop ends it.)"
	}
	return text, nil
}

// mayTake reports whether m's sender may take a session this conversation
// did not start: anyone allowed when permissions.approvers is empty, else
// an approver (or anyone on a trusted platform).
func (d *Dispatcher) mayTake(m Message) bool {
	if len(d.opts.Permissions.Approvers) == 0 || slices.Contains(d.opts.Trusted, m.Platform) {
		return true
	}
	who := m.Platform + ":" + m.User
	for _, a := range d.opts.Permissions.Approvers {
		if a == "*" || a == m.Platform+":*" || a == who {
			return true
		}
	}
	return false
}

// resumeAction takes a click on a Continue button of /sessions.
func (d *Dispatcher) resumeAction(a Action, id string) ActionResult {
	m := Message{Platform: a.Platform, Workspace: a.Workspace, Channel: a.Channel, Thread: a.Thread,
		User: a.User, UserName: a.UserName}
	if !d.allowed(m) {
		return ActionResult{Refusal: "You are not allowed to use this bot.", Err: ErrNotApprover}
	}
	text, err := d.resume(m, id)
	if err != nil {
		d.log.Error("resume", "platform", a.Platform, "err", err)
		return ActionResult{Refusal: "golem could not resume that session: " + err.Error(), Err: err}
	}
	if !strings.HasPrefix(text, "▶️") {
		return ActionResult{Refusal: text, Err: ErrDecided}
	}
	return ActionResult{Settled: text + " — " + firstNonEmpty(a.UserName, a.User)}
}

// terminalSession answers /session: the command that continues this
// conversation's session in a terminal on golem's machine.
func (d *Dispatcher) terminalSession(m Message) (string, error) {
	key := KeyFor(m, d.opts.Scope)
	conv, err := d.opts.Store.Conversation(key)
	if err != nil {
		return "", err
	}
	name, l, no := d.sessionLister(m, conv)
	if l == nil {
		return no, nil
	}
	if conv.SessionID == "" {
		return "This conversation has no agent session yet: send a message first, or `/resume ID` one of `/sessions`.", nil
	}
	dir, found, err := d.sessionPlace(m, key, conv)
	if err != nil {
		return "", err
	}
	if !found {
		return "This conversation's worktree is gone, so its session cannot be continued in a terminal.", nil
	}
	return fmt.Sprintf("To continue this conversation (%s session `%s`) in a terminal on the machine golem runs on, as golem's user:\n%s\n"+
		"Send your next message here only once you have left it: two agents in one session at once write over each other.",
		name, shortSession(conv.SessionID), fenced("sh", l.ResumeCommand(dir, conv.SessionID))), nil
}
