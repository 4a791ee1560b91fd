package core

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/store"
)

// previewLen bounds what a question shows of a command, a file's content
// or an edit, so that it fits every platform's message.
const previewLen = 800

// questionText is a permission request as Markdown: the tool and what it
// will do. withCommands adds how to answer by text, for posters without
// buttons.
func questionText(ev parser.Event, id string, withCommands bool) string {
	var args map[string]any
	_ = json.Unmarshal(ev.Args, &args)
	str := func(k string) string { s, _ := args[k].(string); return s }
	var b strings.Builder
	switch ev.Name {
	case "Bash":
		b.WriteString("🔐 The agent wants to run a command:\n")
		b.WriteString(fence("", str("command")))
		if d := str("description"); d != "" {
			b.WriteString("\n_" + oneLine(d) + "_")
		}
	case "Write":
		fmt.Fprintf(&b, "🔐 The agent wants to write `%s`:\n", oneLine(str("file_path")))
		b.WriteString(fence("", str("content")))
	case "Edit", "MultiEdit":
		fmt.Fprintf(&b, "🔐 The agent wants to edit `%s`:\n", oneLine(str("file_path")))
		b.WriteString(fence("diff", diffPreview(str("old_string"), str("new_string"))))
	case parser.ExitPlanMode:
		b.WriteString("📝 The agent proposes this plan:\n\n")
		b.WriteString(clip(str("plan")))
	case parser.AskUserQuestion:
		if len(ev.Questions()) > 0 { // one question is shown; its options are the buttons
			q := ev.Questions()[0]
			fmt.Fprintf(&b, "❓ %s\n", q.Question)
			for i, o := range q.Options {
				fmt.Fprintf(&b, "%d. **%s**", i+1, o.Label)
				if o.Description != "" {
					b.WriteString(" — " + o.Description)
				}
				b.WriteByte('\n')
			}
		}
	default:
		fmt.Fprintf(&b, "🔐 The agent wants to use %s:\n", oneLine(ev.Name))
		b.WriteString(fence("json", string(ev.Args)))
	}
	if withCommands {
		switch ev.Name {
		case parser.AskUserQuestion:
			fmt.Fprintf(&b, "\nAnswer with `/allow %s`, or `/deny %s`.", id, id)
		case parser.ExitPlanMode:
			fmt.Fprintf(&b, "\nApprove with `/allow %s`, keep planning with `/deny %s`.", id, id)
		default:
			fmt.Fprintf(&b, "\nAnswer with `/allow %s` · `/allow %s session` · `/deny %s`.", id, id, id)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// choices are a request's buttons.
func choices(ev parser.Event, id string) []Choice {
	data := func(verb string) string { return "golem:" + verb + ":" + id }
	switch ev.Name {
	case parser.ExitPlanMode:
		return []Choice{{Label: "Approve", Data: data("allow"), Style: "primary"}, {Label: "Keep planning", Data: data("deny")}}
	case parser.AskUserQuestion:
		var out []Choice
		if len(ev.Questions()) > 0 {
			for i, o := range ev.Questions()[0].Options {
				out = append(out, Choice{Label: o.Label, Data: data("pick") + ":" + strconv.Itoa(i)})
			}
		}
		return append(out, Choice{Label: "Skip", Data: data("deny"), Style: "danger"})
	}
	return []Choice{
		{Label: "Allow", Data: data("allow"), Style: "primary"},
		{Label: "Allow for this session", Data: data("session")},
		{Label: "Deny", Data: data("deny"), Style: "danger"},
	}
}

// decisionText is what a decided question says instead.
func decisionText(rec store.Approval, ans engine.PermissionAnswer, by string, timeout time.Duration) string {
	switch rec.Reason {
	case store.ApprovalTimedOut:
		return fmt.Sprintf("⌛ %s denied: no answer in %s.", rec.Tool, roundDuration(timeout))
	case store.ApprovalStopped:
		return fmt.Sprintf("⏹️ %s denied: the answer was stopped.", rec.Tool)
	case store.ApprovalTurnTimedOut:
		return fmt.Sprintf("⌛ %s denied: the answer ran out of time.", rec.Tool)
	case store.ApprovalTurnEnded:
		return fmt.Sprintf("⏹️ %s denied: the agent ended its answer before it was answered.", rec.Tool)
	case store.ApprovalExpired:
		return fmt.Sprintf("⌛ %s expired: golem restarted before it was answered.", rec.Tool)
	case store.ApprovalPlanMode:
		return fmt.Sprintf("📝 %s denied: plan mode.", rec.Tool)
	}
	switch {
	case rec.Tool == parser.ExitPlanMode && ans.Decision == engine.Deny:
		return "📝 Keep planning, said " + by + "."
	case rec.Tool == parser.ExitPlanMode:
		return "✅ Plan approved by " + by + "."
	case rec.Tool == parser.AskUserQuestion && ans.Decision != engine.Deny:
		var picked []string
		for _, v := range ans.Answers {
			picked = append(picked, v)
		}
		if len(picked) == 0 {
			return "✅ answered by " + by + "."
		}
		slices.Sort(picked)
		return "✅ " + by + " chose **" + strings.Join(picked, ", ") + "**."
	case ans.Decision == engine.AllowSession:
		return fmt.Sprintf("✅ %s allowed for this session by %s.", rec.Tool, by)
	case ans.Decision == engine.Allow:
		return fmt.Sprintf("✅ %s allowed by %s.", rec.Tool, by)
	default:
		return fmt.Sprintf("❌ %s denied by %s.", rec.Tool, by)
	}
}

func roundDuration(d time.Duration) string {
	if d%time.Minute == 0 {
		return strconv.Itoa(int(d/time.Minute)) + " min"
	}
	return d.Round(time.Second).String()
}

// fence puts s in a code block, clipped, with a fence longer than any
// backtick run inside it.
func fence(lang, s string) string {
	s = clip(strings.TrimRight(s, "\n"))
	ticks := "```"
	for strings.Contains(s, ticks) {
		ticks += "`"
	}
	return ticks + lang + "\n" + s + "\n" + ticks
}

// diffPreview shows an edit as removed and added lines.
func diffPreview(old, new string) string {
	var b strings.Builder
	for _, l := range strings.Split(old, "\n") {
		b.WriteString("- " + l + "\n")
	}
	for _, l := range strings.Split(new, "\n") {
		b.WriteString("+ " + l + "\n")
	}
	return b.String()
}

func clip(s string) string {
	if r := []rune(s); len(r) > previewLen {
		return string(r[:previewLen]) + "…"
	}
	return s
}

func oneLine(s string) string {
	return clip(strings.Join(strings.Fields(s), " "))
}
