package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/store"
)

// Command implements core.Scheduler: it answers /every, /at, /schedules,
// /unschedule, /pause, /unpause and /runnow in m's conversation key. Bad
// input is a one-line answer naming what is wrong, and saves nothing.
func (b *Book) Command(m core.Message, key store.Key, cmd, args string) string {
	var text string
	var err error
	switch cmd {
	case "every", "at":
		text, err = b.add(m, key, cmd, args)
	case "schedules":
		text, err = b.list(key)
	case "unschedule", "pause", "unpause", "runnow":
		text, err = b.change(key, cmd, strings.TrimSpace(args))
	default:
		return "Unknown schedule command /" + cmd + "."
	}
	if err != nil {
		b.log.Error("schedules: command", "command", cmd, "conversation", key, "err", err)
		return "⚠️ **Error:** /" + cmd + " failed: " + err.Error()
	}
	return text
}

// maxIDTries bounds the draws of a new schedule's id (four hex digits)
// that another schedule has.
const maxIDTries = 100

// add answers /every and /at.
func (b *Book) add(m core.Message, key store.Key, cmd, args string) (string, error) {
	now := b.clock.Now()
	var req Request
	var perr error
	if cmd == "every" {
		req, perr = ParseEvery(args, b.opts.Zone, b.opts.MinInterval)
	} else {
		req, perr = ParseAt(args, now, b.opts.Zone)
	}
	if perr != nil {
		return "⚠️ /" + cmd + ": " + perr.Error() + ".", nil
	}
	thread := m.Thread
	if thread == "" && m.ID != "" && key.Sub == m.ID { // session_scope: thread: its answers go in this message's thread
		thread = m.ID
	}
	sc := store.Schedule{Key: key, Platform: m.Platform, Workspace: m.Workspace, Channel: m.Channel, Thread: thread,
		User: m.User, UserName: m.UserName, Name: req.Name, Spec: req.Spec.Expr, At: req.Spec.At, Prompt: req.Prompt,
		Continue: req.Session == SessionContinue || req.Session == "" && b.opts.Session == SessionContinue, Created: now}
	if req.Spec.Loc != b.opts.Zone {
		sc.TZ = req.Spec.Loc.String()
	}
	// The store counts this conversation's schedules and saves the new one
	// in one step, so that two /every at once never pass schedules.max.
	err := store.ErrScheduleExists
	for tries := 0; errors.Is(err, store.ErrScheduleExists); tries++ {
		if tries == maxIDTries {
			return "", fmt.Errorf("no free schedule id after %d tries", tries)
		}
		sc.ID = newID(2)
		err = b.opts.Store.AddSchedule(sc, b.opts.Max)
	}
	if errors.Is(err, store.ErrScheduleLimit) {
		return fmt.Sprintf("⚠️ /%s: this conversation has %d schedules, the most it may have (`schedules.max`); `/unschedule ID` one first.", cmd, b.opts.Max), nil
	}
	if err != nil {
		return "", err
	}
	b.changed()
	return b.describe(sc, req.Spec, now), nil
}

// describe is the answer to a new schedule: its id, when in words, the
// time zone and the next three runs.
func (b *Book) describe(sc store.Schedule, spec Spec, now time.Time) string {
	var next []string
	for t := spec.Next(now); !t.IsZero() && len(next) < 3; t = spec.Next(t) {
		next = append(next, when(t, spec.Loc))
	}
	session := "a fresh agent session each run"
	switch {
	case sc.Continue:
		session = "in this conversation's agent session"
	case spec.Expr == "":
		session = "in a fresh agent session"
	}
	label := ""
	if sc.Name != "" {
		label = " (" + sc.Name + ")"
	}
	runs := "Next runs: "
	if len(next) == 1 {
		runs = "Runs: "
	}
	return fmt.Sprintf("⏰ Scheduled `%s`%s: %s, time zone %s, %s.\n%s%s.\n`/runnow %s` · `/pause %s` · `/unschedule %s`",
		sc.ID, label, spec.Describe(), spec.Loc, session, runs, strings.Join(next, ", "), sc.ID, sc.ID, sc.ID)
}

// list answers /schedules.
func (b *Book) list(key store.Key) (string, error) {
	all, err := b.opts.Store.ConversationSchedules(key)
	if err != nil {
		return "", err
	}
	var lines []string
	now := b.clock.Now()
	for _, sc := range all {
		spec, err := b.specOf(sc)
		if err != nil {
			lines = append(lines, fmt.Sprintf("• `%s` — unreadable: %v", sc.ID, err))
			continue
		}
		line := fmt.Sprintf("• `%s`", sc.ID)
		if sc.Name != "" {
			line += " " + sc.Name
		}
		line += " — " + spec.Describe() + ", " + spec.Loc.String()
		if sc.Paused {
			line += " — **paused**"
		} else if e, _ := b.entryOf(sc); e != nil && !e.next.IsZero() {
			next := e.next
			if next.Before(now) {
				next = now
			}
			line += " — next " + when(next, spec.Loc)
		}
		if !sc.LastRun.IsZero() {
			line += fmt.Sprintf(" — last %s: %s", when(sc.LastRun, spec.Loc), strings.ReplaceAll(sc.LastOutcome, "_", " "))
		}
		if sc.Failures > 0 {
			line += fmt.Sprintf(" (%d failed in a row)", sc.Failures)
		}
		if sc.Operator {
			line += " — set in bot.yaml"
		}
		lines = append(lines, line+"\n    "+quote(sc.Prompt))
	}
	if len(lines) == 0 {
		return "No schedules in this conversation. `/every \"0 9 * * 1-5\" PROMPT` or `/at 09:00 PROMPT` sets one.", nil
	}
	return "**Schedules** (`/runnow ID` · `/pause ID` · `/unschedule ID`)\n" + strings.Join(lines, "\n"), nil
}

// maxButtons bounds the schedules /schedules shows buttons for: three
// each, within Discord's 25 a message.
const maxButtons = 8

// Choices implements core.Scheduler: Run now, Pause (or Resume) and Delete
// for each of key's first schedules; an operator's has no Delete.
func (b *Book) Choices(key store.Key) []core.Choice {
	all, err := b.opts.Store.ConversationSchedules(key)
	if err != nil {
		return nil
	}
	var out []core.Choice
	for _, sc := range all[:min(len(all), maxButtons)] {
		out = append(out, core.Choice{Label: "Run " + sc.ID + " now", Data: "golem:runnow:" + sc.ID, Style: "primary"})
		if sc.Paused {
			out = append(out, core.Choice{Label: "Resume " + sc.ID, Data: "golem:unpause:" + sc.ID})
		} else {
			out = append(out, core.Choice{Label: "Pause " + sc.ID, Data: "golem:pause:" + sc.ID})
		}
		if !sc.Operator {
			out = append(out, core.Choice{Label: "Delete " + sc.ID, Data: "golem:unschedule:" + sc.ID, Style: "danger"})
		}
	}
	return out
}

// quote is a prompt shortened for a list.
func quote(p string) string {
	p = strings.Join(strings.Fields(p), " ")
	if r := []rune(p); len(r) > 80 {
		p = string(r[:79]) + "…"
	}
	return "_" + p + "_"
}

// change answers /unschedule, /pause, /unpause and /runnow.
func (b *Book) change(key store.Key, cmd, id string) (string, error) {
	if id == "" {
		return fmt.Sprintf("⚠️ /%s: which schedule? `/%s ID`; /schedules lists them.", cmd, cmd), nil
	}
	sc, found, err := b.opts.Store.Schedule(id)
	if err != nil {
		return "", err
	}
	if !found || sc.Key != key {
		return fmt.Sprintf("⚠️ /%s: no schedule `%s` in this conversation; /schedules lists them.", cmd, id), nil
	}
	var text string
	switch cmd {
	case "unschedule":
		if sc.Operator {
			return fmt.Sprintf("⚠️ /unschedule: `%s` is declared in bot.yaml (`schedules.jobs`); only the operator can remove it. `/pause %s` stops it for now.", id, id), nil
		}
		if err := b.opts.Store.DeleteSchedule(id); err != nil {
			return "", err
		}
		text = fmt.Sprintf("🗑️ Schedule `%s` deleted.", id)
	case "pause", "unpause", "runnow":
		_, err = b.opts.Store.UpdateSchedule(id, func(s *store.Schedule) bool {
			switch cmd {
			case "pause":
				s.Paused = true
			case "unpause":
				s.Paused, s.Failures = false, 0
				if now := b.clock.Now(); s.Spec != "" && now.After(s.Fired) {
					s.Fired = now // what came while it was paused is not a missed run
				}
			case "runnow":
				s.RunNow = true
			}
			return true
		})
		if err != nil {
			return "", err
		}
		text = map[string]string{"pause": fmt.Sprintf("⏸️ Schedule `%s` paused; `/unpause %s` resumes it.", id, id),
			"unpause": fmt.Sprintf("▶️ Schedule `%s` resumed.", id),
			"runnow":  fmt.Sprintf("⏰ Schedule `%s` runs now.", id)}[cmd]
	}
	b.changed()
	return text, nil
}
