package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/worktree"
)

// prTimeout and prOutputLimit bound what /pr runs and prints.
const (
	prTimeout     = 2 * time.Minute
	prOutputLimit = 8 << 10
)

// workAnswer is the answer of a command about the conversation's
// worktree: text, and optionally a file to attach under it.
type workAnswer struct {
	text  string
	isErr bool
	file  *File // a temporary file, removed once sent
}

// workCommand answers /diff, /branch and /pr. They run git or pr_command,
// which takes time, so the answer is worked out off Handle's goroutine and
// then sent in order with the conversation's other short answers.
func (d *Dispatcher) workCommand(m Message, name string) {
	key := KeyFor(m, d.opts.Scope)
	queued := d.answers.Add(key, func() (func(), bool) {
		ans := d.workAnswer(m, key, name)
		return func() { d.deliverWork(m, ans) }, true
	})
	if !queued && m.Sink != nil {
		m.Sink(parser.Event{Type: parser.Error, Message: "golem is shutting down", Reason: parser.Interrupted})
	}
}

func (d *Dispatcher) workAnswer(m Message, key store.Key, name string) workAnswer {
	if d.opts.Workdirs.Isolation() != worktree.Worktree {
		return workAnswer{text: "This bot runs every conversation in one shared workspace, so there is no branch of its own to show. " +
			"The operator can set `isolation: worktree` in bot.yaml to give each conversation a git worktree and a branch."}
	}
	conv, err := d.opts.Store.Conversation(key)
	if err != nil {
		return workAnswer{text: "⚠️ **Error:** /" + name + " failed: " + err.Error(), isErr: true}
	}
	ctx, cancel := context.WithTimeout(d.life, prTimeout+30*time.Second)
	defer cancel()
	w, found, err := d.opts.Workdirs.Find(ctx, d.settings(m, conv).workdir, key.String())
	if err != nil {
		d.log.Error("find worktree", "command", name, "conversation", key, "err", err)
		return workAnswer{text: "⚠️ **Error:** /" + name + " failed: " + err.Error(), isErr: true}
	}
	if !found {
		return workAnswer{text: "This conversation has no worktree yet: its first message to the agent makes one, on a branch of its own."}
	}
	switch name {
	case "diff":
		return d.diff(ctx, m, w)
	case "branch":
		return workAnswer{text: branchText(w)}
	default:
		return d.pr(ctx, w)
	}
}

func branchText(w worktree.Workspace) string {
	return fmt.Sprintf("**Branch:** `%s` (started at `%s`)\n**Worktree:** `%s`\n"+
		"It is a branch of the repository at `%s`: `git log %s` there shows it; from another clone, `git fetch %s %s`.",
		w.Branch, short(w.Base), w.Tree, w.Repo, w.Branch, w.Repo, w.Branch)
}

func short(sha string) string { return sha[:min(len(sha), 10)] }

func (d *Dispatcher) diff(ctx context.Context, m Message, w worktree.Workspace) workAnswer {
	c, err := d.opts.Workdirs.Diff(ctx, w)
	if err != nil {
		d.log.Error("diff", "worktree", w.Tree, "err", err)
		return workAnswer{text: "⚠️ **Error:** /diff failed: " + err.Error(), isErr: true}
	}
	if c.Patch == "" {
		return workAnswer{text: fmt.Sprintf("No changes on `%s` since it started at `%s`.", w.Branch, short(w.Base))}
	}
	head := fmt.Sprintf("**%s** since `%s`: %s", w.Branch, short(w.Base), c.Summary)
	text := head + "\n" + fenced("diff", c.Patch)
	if m.Sink != nil {
		return workAnswer{text: text}
	}
	p := d.poster(m.Platform)
	if p == nil || p.Measure(text) <= p.Limits().MaxLen {
		return workAnswer{text: text}
	}
	if limit := p.Limits().MaxUpload; !isUploader(p) || limit > 0 && int64(len(c.Patch)) >= limit {
		return workAnswer{text: head + "\nThe diff is too long to show here. In the worktree (`/branch` says where), `git diff " + short(w.Base) + "` shows it and `git status` the new files."}
	}
	f, err := os.CreateTemp("", "golem-diff-*")
	if err == nil {
		_, err = f.WriteString(c.Patch + "\n")
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		return workAnswer{text: "⚠️ **Error:** /diff failed: " + err.Error(), isErr: true}
	}
	name := strings.ReplaceAll(w.Branch, "/", "-") + ".diff"
	return workAnswer{text: head + "\nThe diff is attached.", file: &File{Name: name, Path: f.Name(), Size: int64(len(c.Patch) + 1)}}
}

// fenced puts text in a code block whose fence no line of text can close.
func fenced(lang, text string) string {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	return fence + lang + "\n" + strings.TrimRight(text, "\n") + "\n" + fence
}

func (d *Dispatcher) pr(ctx context.Context, w worktree.Workspace) workAnswer {
	if d.opts.PRCommand == "" {
		return workAnswer{text: "No `pr_command` is set, so golem cannot open a pull request. The operator sets it in bot.yaml, e.g. " +
			"`pr_command: \"gh pr create --fill --head {branch}\"`; `/pr` then runs it in this conversation's worktree with `{branch}` filled in. " +
			"Meanwhile `/branch` says how to fetch the branch."}
	}
	res, err := worktree.Run(ctx, w, d.opts.PRCommand, prTimeout, prOutputLimit)
	if err != nil {
		return workAnswer{text: "⚠️ **Error:** /pr could not run `pr_command`: " + err.Error(), isErr: true}
	}
	out := strings.TrimSpace(res.Output)
	if res.Truncated {
		out += "\n[… cut at 8 KiB]"
	}
	if res.Err != nil {
		d.log.Warn("pr_command failed", "worktree", w.Tree, "err", res.Err)
		text := "⚠️ **Error:** `pr_command` failed (" + res.Err.Error() + ")"
		if out != "" {
			text += ":\n" + fenced("", out)
		}
		return workAnswer{text: text, isErr: true}
	}
	if out == "" {
		return workAnswer{text: "`pr_command` ran for `" + w.Branch + "` and printed nothing."}
	}
	return workAnswer{text: "`pr_command` for `" + w.Branch + "`:\n" + out}
}

// deliverWork sends ans: to the Sink, or posted (with its file attached
// under it when there is one).
func (d *Dispatcher) deliverWork(m Message, ans workAnswer) {
	if ans.file != nil {
		defer os.Remove(ans.file.Path)
	}
	if m.Sink != nil {
		if ans.isErr {
			m.Sink(parser.Event{Type: parser.Error, Message: ans.text})
			return
		}
		m.Sink(parser.Event{Type: parser.Text, Content: ans.text})
		m.Sink(parser.Event{Type: parser.Done})
		return
	}
	if ans.file == nil {
		d.post(m, ans.text)
		return
	}
	p := d.poster(m.Platform)
	ref, err := p.Send(d.life, d.place(m), ans.text)
	if err != nil {
		d.log.Warn("reply", "platform", m.Platform, "err", err)
		return
	}
	if err := p.(Uploader).Upload(d.life, ref, *ans.file); err != nil {
		d.log.Warn("upload", "platform", m.Platform, "err", err)
		if err := p.SendActivity(d.life, ref, "⚠️ The diff could not be attached: "+err.Error()); err != nil {
			d.log.Warn("reply", "platform", m.Platform, "err", err)
		}
	}
}

func isUploader(p Poster) bool {
	_, ok := p.(Uploader)
	return ok
}
