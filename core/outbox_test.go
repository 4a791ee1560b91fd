package core_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/parser"
)

func TestFilesLeftInOutboxAreUploadedUnderTheAnswer(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	u := &uploader{recorder: h.rec}
	u.limits.MaxUpload = 100
	h.d.Register(u)
	if err := os.MkdirAll(filepath.Join(h.opts.Workspace, "outbox"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.opts.Workspace, "outbox", "old.txt"), []byte("sent last time"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.say("alice", "!write outbox/report.txt the report\n!write outbox/big.bin "+strings.Repeat("x", 200)+"\n!write outbox/\u202eevil\x01name.txt gotcha\nhere you go")
	h.rec.waitText("echo: here you go")
	h.rec.waitFor("the note on the big file", func([]string) bool {
		h.rec.mu.Lock()
		defer h.rec.mu.Unlock()
		return len(h.rec.activity) > 0
	})
	files := u.uploaded()
	if len(files) != 2 {
		t.Fatalf("uploaded %d files, want report.txt and the hostile name: %+v", len(files), files)
	}
	answer := h.rec.order[0]
	var names []string
	for _, f := range files {
		names = append(names, f.file.Name)
		if f.answer.ID != answer {
			t.Errorf("%s uploaded under %q, not the answer %q", f.file.Name, f.answer.ID, answer)
		}
	}
	if names[0] != "report.txt" || files[0].bytes != "the report" {
		t.Errorf("uploaded %q", names)
	}
	if names[1] != "_evil_name.txt" || files[1].bytes != "gotcha" {
		t.Errorf("a hostile name reached the platform as %q", names[1])
	}
	h.rec.mu.Lock()
	note := h.rec.activity[0]
	h.rec.mu.Unlock()
	if note.answer.ID != answer || !strings.Contains(note.text, "`big.bin` (200 bytes) is over the 100 bytes") {
		t.Errorf("the file over the cap got %+v", note)
	}
}

func TestFilesWithoutUploadsGetANote(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	h.say("alice", "!write outbox/chart.png PNG\ndone")
	h.rec.waitFor("the note", func([]string) bool {
		h.rec.mu.Lock()
		defer h.rec.mu.Unlock()
		return len(h.rec.activity) > 0
	})
	h.rec.mu.Lock()
	note := h.rec.activity[0].text
	h.rec.mu.Unlock()
	if !strings.Contains(note, "`chart.png` (3 bytes)") || !strings.Contains(note, filepath.Join(h.opts.Workspace, "outbox")) {
		t.Errorf("note = %q", note)
	}
}

func TestFilesGoToASinkBeforeTheTerminalEvent(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	q := h.sinkMessage("!write outbox/a.txt alpha\n!write outbox/.hidden no\nok")
	var got []parser.Event
	for {
		evs := q.Take()
		got = append(got, evs...)
		if len(got) > 0 && got[len(got)-1].Terminal() {
			break
		}
		<-q.Ready()
	}
	var files []parser.Event
	for _, ev := range got {
		if ev.Type == parser.File {
			files = append(files, ev)
		}
	}
	if len(files) != 1 || files[0].Name != "a.txt" || files[0].File.Size != 5 || files[0].File.Path != filepath.Join(h.opts.Workspace, "outbox", "a.txt") {
		t.Fatalf("file events %+v", files)
	}
	if got[len(got)-2].Type != parser.File || got[len(got)-1].Type != parser.Done {
		t.Errorf("the file event does not come right before the terminal event: %+v", got)
	}
}

// With isolation: shared two conversations' agents work in one folder: a
// file one of them leaves in outbox/ while the other runs is sent to
// neither chat (it could be either's), and the answer says so without
// naming it.
func TestFilesOfConcurrentConversationsInOneFolderAreSentToNeither(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	u := &uploader{recorder: h.rec}
	u.limits.MaxUpload = 1 << 20
	h.d.Register(u)
	h.d.Handle(context.Background(), core.Message{Platform: "rec", Channel: "C1", User: "alice", ID: "a1",
		Text: "!write outbox/secret-plan.txt only for C1\n!sleep 1s\nA is done"})
	h.d.Handle(context.Background(), core.Message{Platform: "rec", Channel: "C2", User: "alice", ID: "b1",
		Text: "!sleep 200ms\nB is done"})
	h.rec.waitText("echo: A is done")
	h.rec.waitText("echo: B is done")
	h.rec.waitFor("the note on the withheld file", func([]string) bool {
		h.rec.mu.Lock()
		defer h.rec.mu.Unlock()
		for _, a := range h.rec.activity {
			if strings.Contains(a.text, "1 new files in") && strings.Contains(a.text, "another conversation's agent worked in the same folder") {
				return true
			}
		}
		return false
	})
	h.stop()
	if files := u.uploaded(); len(files) != 0 {
		t.Errorf("a file left while two conversations worked in one folder was sent: %+v", files)
	}
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	for _, a := range h.rec.activity {
		if strings.Contains(a.text, "secret-plan") {
			t.Errorf("a note names the other conversation's file: %q", a.text)
		}
	}
	if b, err := os.ReadFile(filepath.Join(h.opts.Workspace, "outbox", "secret-plan.txt")); err != nil || string(b) != "only for C1" {
		t.Errorf("the withheld file is not kept: %q, %v", b, err)
	}
}

// An outbox/ the agent turned into a symlink to another folder (golem's
// data, say) sends nothing from there (found by review: the store was
// uploaded to the chat).
func TestAnOutboxThatIsASymlinkSendsNothing(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	u := &uploader{recorder: h.rec}
	u.limits.MaxUpload = 1 << 20
	h.d.Register(u)
	secret := t.TempDir()
	if err := os.WriteFile(filepath.Join(secret, "golem.db"), []byte("store-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.say("alice", "!sh rm -rf outbox && ln -s "+secret+" outbox\nhere you go")
	h.rec.waitText("echo: here you go")
	h.stop()
	if files := u.uploaded(); len(files) != 0 {
		t.Errorf("uploaded %+v from a symlinked outbox", files)
	}
}

// A file swapped after core listed it and before the platform reads it
// (a symlink to golem's data, outbox/ turned into a symlink to it, a
// FIFO that would block the read) sends nothing of what it leads to: the upload fails with a note, and the
// answer's other files still go.
func TestAnOutboxFileSwappedBeforeItsUploadSendsNothingElse(t *testing.T) {
	secret := t.TempDir()
	if err := os.WriteFile(filepath.Join(secret, "report.txt"), []byte("store-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		swap func(t *testing.T, outbox string)
	}{
		{"a symlink to a file outside", func(t *testing.T, outbox string) {
			os.Remove(filepath.Join(outbox, "report.txt"))
			if err := os.Symlink(filepath.Join(secret, "report.txt"), filepath.Join(outbox, "report.txt")); err != nil {
				t.Fatal(err)
			}
		}},
		{"outbox turned into a symlink", func(t *testing.T, outbox string) {
			os.Rename(outbox, outbox+".old")
			if err := os.Symlink(secret, outbox); err != nil {
				t.Fatal(err)
			}
		}},
		{"a FIFO", func(t *testing.T, outbox string) {
			os.Remove(filepath.Join(outbox, "report.txt"))
			if err := syscall.Mkfifo(filepath.Join(outbox, "report.txt"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, chatLimits, nil)
			u := &uploader{recorder: h.rec}
			u.limits.MaxUpload = 1 << 20
			outbox := filepath.Join(h.opts.Workspace, "outbox")
			u.before = func(f core.File) {
				if f.Name == "report.txt" {
					tc.swap(t, outbox)
				}
			}
			h.d.Register(u)
			h.say("alice", "!write outbox/a-first.txt first\n!write outbox/report.txt the report\nhere you go")
			h.rec.waitText("echo: here you go")
			h.rec.waitFor("the note on the swapped file", func([]string) bool {
				h.rec.mu.Lock()
				defer h.rec.mu.Unlock()
				return len(h.rec.activity) > 0
			})
			h.stop()
			files := u.uploaded()
			if len(files) != 1 || files[0].file.Name != "a-first.txt" || files[0].bytes != "first" {
				t.Errorf("uploaded %+v, want a-first.txt alone", files)
			}
			h.rec.mu.Lock()
			note := h.rec.activity[0].text
			h.rec.mu.Unlock()
			if !strings.Contains(note, "`report.txt` could not be sent") || !strings.Contains(note, core.ErrNotAFile.Error()) {
				t.Errorf("the note on the swapped file: %q", note)
			}
		})
	}
}

// A Sink (the HTTP API, which copies the bytes when it hands the event
// on) reads a file event's bytes with its Open, which follows no symlink
// put in the file's place since core listed it.
func TestAFileEventOpensOnlyTheFileCoreListed(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "golem.db")
	if err := os.WriteFile(secret, []byte("store-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, chatLimits, nil)
	q := h.sinkMessage("!write outbox/a.txt alpha\n!write outbox/b.txt bravo\nok")
	var files []parser.Event
	for done := false; !done; {
		for _, ev := range q.Take() {
			if ev.Type == parser.File {
				files = append(files, ev)
			}
			done = done || ev.Terminal()
		}
		if !done {
			<-q.Ready()
		}
	}
	if len(files) != 2 || files[0].File.Open == nil {
		t.Fatalf("file events %+v", files)
	}
	read := func(ev parser.Event) (string, error) {
		in, err := ev.File.Open()
		if err != nil {
			return "", err
		}
		defer in.Close()
		b, err := io.ReadAll(in)
		return string(b), err
	}
	if got, err := read(files[0]); err != nil || got != "alpha" {
		t.Errorf("a.txt read %q, %v", got, err)
	}
	b := filepath.Join(h.opts.Workspace, "outbox", "b.txt")
	os.Remove(b)
	if err := os.Symlink(secret, b); err != nil {
		t.Fatal(err)
	}
	if got, err := read(files[1]); !errors.Is(err, core.ErrNotAFile) || strings.Contains(got, "secret") {
		t.Errorf("b.txt swapped for a symlink to golem's data read %q, %v", got, err)
	}
}
