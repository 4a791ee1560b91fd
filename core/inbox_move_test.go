package core_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golem-chat/golem/core"
)

// An attachment is saved into the workspace's inbox by the adapter; a
// conversation that works elsewhere (its channel's workdir, its own git
// worktree) finds it in its own working directory's inbox/.
func TestAttachmentMovesIntoTheTurnsWorkingDirectory(t *testing.T) {
	workdir := t.TempDir()
	h := newHarness(t, chatLimits, func(o *core.Options) {
		o.Channels = map[string]core.Override{"rec:C1": {Workdir: workdir}}
	})
	in := core.Inbox{Dir: filepath.Join(h.opts.Workspace, "inbox")}
	att, err := in.Save("report.txt", strings.NewReader("numbers"))
	if err != nil {
		t.Fatal(err)
	}
	h.d.Handle(context.Background(), core.Message{Platform: "rec", Channel: "C1", User: "alice", ID: "m-att",
		Text: "read it", Attachments: []core.Attachment{att}})
	want := filepath.Join(workdir, "inbox", filepath.Base(att.Path))
	h.rec.waitText("Attached files: " + want)
	if b, err := os.ReadFile(want); err != nil || string(b) != "numbers" {
		t.Errorf("the attachment is not in the working directory's inbox: %q, %v", b, err)
	}
	if _, err := os.Stat(att.Path); !os.IsNotExist(err) {
		t.Errorf("the attachment is left in the workspace's inbox too: %v", err)
	}
}

func TestAttachmentInsideTheWorkingDirectoryStays(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	in := core.Inbox{Dir: filepath.Join(h.opts.Workspace, "inbox")}
	att, err := in.Save("a b.png", strings.NewReader("png"))
	if err != nil {
		t.Fatal(err)
	}
	h.d.Handle(context.Background(), core.Message{Platform: "rec", Channel: "C1", User: "alice", ID: "m-att2",
		Text: "look", Attachments: []core.Attachment{att}})
	h.rec.waitText("Attached files: " + att.Path)
}

// An agent that turned its working directory's inbox/ into a symlink to a
// folder outside (one golem writes and it may not: /etc/cron.d, another
// conversation's worktree) does not have golem move the next attachment
// there: golem writes only inside the working directory, and the file
// stays in the workspace's inbox.
func TestAttachmentIsNotMovedThroughASymlinkedInbox(t *testing.T) {
	workdir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(workdir, "inbox")); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, chatLimits, func(o *core.Options) {
		o.Channels = map[string]core.Override{"rec:C1": {Workdir: workdir}}
	})
	in := core.Inbox{Dir: filepath.Join(h.opts.Workspace, "inbox")}
	att, err := in.Save("report.txt", strings.NewReader("* * * * * root sh -c 'id > /x'"))
	if err != nil {
		t.Fatal(err)
	}
	h.d.Handle(context.Background(), core.Message{Platform: "rec", Channel: "C1", User: "alice", ID: "m-att",
		Text: "read it", Attachments: []core.Attachment{att}})
	h.rec.waitText("Attached files: " + att.Path)
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("golem wrote the attachment through the inbox/ symlink, outside the working directory: %v", entries)
	}
}

// An inbox/ of the workspace that an agent made a symlink to a folder
// outside (with isolation: shared, before the first attachment made it)
// does not have golem save an attachment there.
func TestAttachmentIsNotSavedThroughASymlinkedInbox(t *testing.T) {
	workspace, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(workspace, "inbox")); err != nil {
		t.Fatal(err)
	}
	in := core.Inbox{Dir: filepath.Join(workspace, "inbox")}
	if _, err := in.Save("report.txt", strings.NewReader("x")); err == nil {
		t.Error("an attachment was saved into a symlinked inbox/")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("golem wrote the attachment through the inbox/ symlink: %v", entries)
	}
}
