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
