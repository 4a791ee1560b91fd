package core_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/worktree"
)

// uploader is the recorder with file uploads.
type uploader struct {
	*recorder
	mu    sync.Mutex
	files []uploaded
	// before, when set, runs as an upload starts (a swap in the outbox).
	before func(core.File)
}

type uploaded struct {
	answer core.MessageRef
	file   core.File
	bytes  string
}

var _ core.Uploader = (*uploader)(nil)

func (u *uploader) Upload(_ context.Context, answer core.MessageRef, f core.File) error {
	if u.before != nil {
		u.before(f)
	}
	in, err := f.Open() // as the platforms' Uploaders read
	if err != nil {
		return err
	}
	b, err := io.ReadAll(in)
	in.Close()
	if err != nil {
		return err
	}
	u.mu.Lock()
	u.files = append(u.files, uploaded{answer: answer, file: f, bytes: string(b)})
	u.mu.Unlock()
	u.notify()
	return nil
}

func (u *uploader) uploaded() []uploaded {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]uploaded(nil), u.files...)
}

// answerOf sends a command in C1 through a Sink and returns the text it
// got, failing on an error answer.
func answerOf(t *testing.T, h *harness, command string) string {
	t.Helper()
	q := h.sayIn("C1", command)
	var text strings.Builder
	for {
		for _, ev := range q.Take() {
			switch ev.Type {
			case parser.Text:
				text.WriteString(ev.Content)
			case parser.Done:
				return text.String()
			case parser.Error:
				t.Fatalf("%s answered an error: %s", command, ev.Message)
			}
		}
		<-q.Ready()
	}
}

func worktreeHarness(t *testing.T, tweak func(*core.Options)) (*harness, string) {
	t.Helper()
	repo := gitRepo(t, map[string]string{"committed.txt": "one\n", "edited.txt": "before\n"})
	h := newHarness(t, chatLimits, func(o *core.Options) {
		o.Workspace, o.Workdirs = repo, worktrees(t, filepath.Join(t.TempDir(), "wt"))
		if tweak != nil {
			tweak(o)
		}
	})
	return h, repo
}

func TestDiffShowsCommittedUncommittedAndNewFiles(t *testing.T) {
	h, repo := worktreeHarness(t, nil)
	if got := answerOf(t, h, "/diff"); !strings.Contains(got, "no worktree yet") {
		t.Errorf("/diff before the first message = %q", got)
	}
	if ev := terminal(t, h.sayIn("C1", "!write committed.txt one two")); ev.Type != parser.Done {
		t.Fatal(ev)
	}
	dir := enginetest.ReadLog(t, h.log)[0].Cwd
	gitIn(t, dir, "commit", "-q", "-am", "the agent's commit")
	if ev := terminal(t, h.sayIn("C1", "!write edited.txt after\n!write src/new.go package src")); ev.Type != parser.Done {
		t.Fatal(ev)
	}

	got := answerOf(t, h, "/diff")
	for _, want := range []string{
		"```diff\n", "+one two", "diff --git a/edited.txt b/edited.txt", "-before", "+after",
		"diff --git a/src/new.go b/src/new.go", "+package src", "3 files changed",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("/diff lacks %q:\n%s", want, got)
		}
	}
	if st := gitIn(t, repo, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("the main checkout is not clean:\n%s", st)
	}

	branch := answerOf(t, h, "/branch")
	if !strings.Contains(branch, "golem/rec-c1-") || !strings.Contains(branch, dir) || !strings.Contains(branch, "git fetch "+repo) {
		t.Errorf("/branch = %q", branch)
	}
}

func TestLongDiffIsAttachedAsAFile(t *testing.T) {
	h, _ := worktreeHarness(t, nil)
	u := &uploader{recorder: h.rec}
	u.limits.MaxUpload = 1 << 20
	h.d.Register(u)
	long := strings.Repeat("a line the agent wrote\n", 100)
	if ev := terminal(t, h.sayIn("C1", "!write big.txt "+strings.ReplaceAll(long, "\n", " "))); ev.Type != parser.Done {
		t.Fatal(ev)
	}
	h.say("alice", "/diff")
	h.rec.waitText("The diff is attached.")
	h.rec.waitFor("the upload", func([]string) bool { return len(u.uploaded()) == 1 })
	f := u.uploaded()[0]
	if !strings.HasPrefix(f.file.Name, "golem-rec-c1-") || !strings.HasSuffix(f.file.Name, ".diff") || !strings.Contains(f.bytes, "+++ b/big.txt") {
		t.Errorf("uploaded %q with %q", f.file.Name, f.bytes)
	}
	// The file is removed once Upload has returned, a moment after the
	// upload was recorded: wait for that, failing if it stays.
	h.rec.waitFor("the diff's temporary file "+f.file.Path+" removed", func([]string) bool {
		_, err := os.Stat(f.file.Path)
		return os.IsNotExist(err)
	})
}

func TestLongDiffWithoutUploadsSaysWhereItIs(t *testing.T) {
	h, _ := worktreeHarness(t, nil)
	long := strings.Repeat("a line the agent wrote ", 100)
	if ev := terminal(t, h.sayIn("C1", "!write big.txt "+long)); ev.Type != parser.Done {
		t.Fatal(ev)
	}
	h.say("alice", "/diff")
	h.rec.waitText("too long to show here")
	h.rec.checkViolations()
}

func TestPRRunsTheCommandInTheWorktree(t *testing.T) {
	h, _ := worktreeHarness(t, func(o *core.Options) {
		o.PRCommand = `echo "https://git.example/pr/new?head={branch}"; git rev-parse --abbrev-ref HEAD`
	})
	if ev := terminal(t, h.sayIn("C1", "hi")); ev.Type != parser.Done {
		t.Fatal(ev)
	}
	got := answerOf(t, h, "/pr")
	branch := worktree.Branch("rec::C1") // the conversation key of C1
	if !strings.Contains(got, "https://git.example/pr/new?head="+branch+"\n"+branch) {
		t.Errorf("/pr = %q, want the command's output for %s", got, branch)
	}

	h.opts.PRCommand = "echo denied >&2; exit 4"
	h.stop()
	h.start()
	q := h.sayIn("C1", "/pr")
	if ev := terminal(t, q); ev.Type != parser.Error || !strings.Contains(ev.Message, "exit status 4") || !strings.Contains(ev.Message, "denied") {
		t.Errorf("a failing pr_command answered %+v", ev)
	}
}

func TestPRWithoutACommandSaysHowToSetIt(t *testing.T) {
	h, _ := worktreeHarness(t, nil)
	if ev := terminal(t, h.sayIn("C1", "hi")); ev.Type != parser.Done {
		t.Fatal(ev)
	}
	if got := answerOf(t, h, "/pr"); !strings.Contains(got, "pr_command") || !strings.Contains(got, "{branch}") {
		t.Errorf("/pr without pr_command = %q", got)
	}
}

func TestWorktreeCommandsInASharedWorkspaceExplain(t *testing.T) {
	h := newHarness(t, chatLimits, nil)
	for _, c := range []string{"/diff", "/branch", "/pr"} {
		if got := answerOf(t, h, c); !strings.Contains(got, "isolation: worktree") {
			t.Errorf("%s in a shared workspace = %q", c, got)
		}
	}
	if got := answerOf(t, h, "/help"); !strings.Contains(got, "`/diff`") || !strings.Contains(got, "`/pr`") {
		t.Errorf("/help = %q", got)
	}
}
