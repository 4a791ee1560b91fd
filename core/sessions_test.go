package core_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/engine/enginetest"
)

// Sessions recorded from the real Claude Code CLI (see
// engine/testdata/sessions/claude): db2e0271 has the prompts "first
// prompt\nsecond line" and "again please", 356511aa only "run echo hi".
const (
	recordedTwo = "db2e0271-741d-4048-9b12-17b602c68216"
	recordedOne = "356511aa-a952-4555-8104-4988624c5e6a"
)

// sessionsHarness is a harness whose Claude Code keeps its sessions in
// config, with the recorded ones in the workspace's projects folder.
type sessionsHarness struct {
	*harness
	config string
	cli    string // the fake CLI, Claude Code's command
}

func newSessionsHarness(t *testing.T, tweak func(*core.Options)) *sessionsHarness {
	t.Helper()
	s := &sessionsHarness{config: filepath.Join(t.TempDir(), "claude"), cli: enginetest.Build(t)}
	s.harness = newHarness(t, core.Limits{MaxLen: 4000}, func(o *core.Options) {
		o.Engines["claude-code"] = engine.NewClaudeCode(engine.Config{
			Command: s.cli,
			Env:     map[string]string{"FAKE_AGENT_LOG": filepath.Join(o.Workspace, "agent.log"), "CLAUDE_CONFIG_DIR": s.config},
		})
		o.Allow = []string{"rec:alice", "rec:bob"}
		if tweak != nil {
			tweak(o)
		}
	})
	s.log = filepath.Join(s.opts.Workspace, "agent.log")
	s.session(t, recordedTwo, recordedTwo, s.opts.Workspace, time.Now().Add(-time.Hour))
	s.session(t, recordedOne, recordedOne, s.opts.Workspace, time.Now().Add(-time.Minute))
	return s
}

// session writes the recorded session from as session id of workdir.
func (s *sessionsHarness) session(t *testing.T, from, id, workdir string, mtime time.Time) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("../engine/testdata/sessions/claude", from+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(s.config, "projects", engine.ClaudeProjectName(workdir))
	path := filepath.Join(dir, id+".jsonl")
	raw = bytes.ReplaceAll(bytes.ReplaceAll(raw, []byte(from), []byte(id)), []byte("/WORKDIR"), []byte(workdir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// ask says text as user and returns the answer that follows.
func (s *sessionsHarness) ask(user, text string) string {
	s.t.Helper()
	n := len(s.rec.texts())
	s.say(user, text)
	s.rec.waitFor("an answer to "+text, func(texts []string) bool { return len(texts) > n })
	return s.rec.texts()[n]
}

func TestSessionsListAndResume(t *testing.T) {
	s := newSessionsHarness(t, nil)
	list := s.ask("alice", "/sessions")
	for _, want := range []string{
		"**claude-code sessions in `" + s.opts.Workspace + "`**, newest first:",
		"• `356511aa` · ", " · 1 prompt · “run echo hi”",
		"• `db2e0271` · ", " · 2 prompts · “first prompt”",
		"`/resume ID`",
	} {
		if !strings.Contains(list, want) {
			t.Errorf("/sessions lacks %q:\n%s", want, list)
		}
	}
	if strings.Index(list, "356511aa") > strings.Index(list, "db2e0271") {
		t.Errorf("/sessions is not newest first:\n%s", list)
	}
	if strings.Contains(list, "← **this conversation**") {
		t.Errorf("no session is this conversation's yet:\n%s", list)
	}

	if got := s.ask("alice", "/resume DB2E"); !strings.Contains(got, "now continues session `db2e0271`: your next message goes on from there.") {
		t.Fatalf("/resume DB2E: %q", got)
	}
	s.say("alice", "carry on")
	s.rec.waitText("echo: carry on")
	invs := enginetest.ReadLog(t, s.log)
	if id, _ := invs[len(invs)-1].Flag("--resume"); id != recordedTwo {
		t.Errorf("the next turn ran with --resume %q, want %s", id, recordedTwo)
	}
	if list := s.ask("alice", "/sessions"); !strings.Contains(list, "`db2e0271` · ") ||
		!strings.Contains(list[strings.Index(list, "db2e0271"):], "← **this conversation**") {
		t.Errorf("/sessions does not mark the session in use:\n%s", list)
	}
	cmd := s.ask("alice", "/session")
	want := "```sh\ncd " + s.opts.Workspace + " && CLAUDE_CONFIG_DIR=" + s.config + " " + s.cli + " --resume " + recordedTwo + "\n```"
	if !strings.Contains(cmd, want) {
		t.Errorf("/session:\n%s\nwant %s", cmd, want)
	}
}

// TestResumeRefusals: an unknown, short, ambiguous or other directory's
// prefix answers why and changes nothing.
func TestResumeRefusals(t *testing.T) {
	s := newSessionsHarness(t, nil)
	s.session(t, recordedOne, "db2e9999-0000-4000-8000-000000000000", s.opts.Workspace, time.Now())
	other := t.TempDir()
	s.session(t, recordedOne, "abcd1111-0000-4000-8000-000000000000", other, time.Now())
	for _, c := range []struct{ arg, want string }{
		{"ffff", "No claude-code session of this working directory starts with `ffff`; `/sessions` lists them. Nothing changed."},
		{"db2", "`db2` is not a session id: give at least 4 of its first characters"},
		{"db2e", "`db2e` is the start of 2 sessions (`db2e0271`, `db2e9999`): give more of its characters. Nothing changed."},
		{"abcd11", "Session `abcd1111` belongs to `" + other + "`, not to this conversation's `" + s.opts.Workspace + "`"},
		{"../../x", "is not a session id"},
		{"", "`/resume ID` continues an agent session of this working directory"},
	} {
		if got := s.ask("alice", strings.TrimSpace("/resume "+c.arg)); !strings.Contains(got, c.want) {
			t.Errorf("/resume %s: %q, want %q", c.arg, got, c.want)
		}
	}
	if got := s.ask("alice", "/session"); !strings.Contains(got, "no agent session yet") {
		t.Errorf("/session after refusals: %q", got)
	}
	s.say("alice", "fresh")
	s.rec.waitText("echo: fresh")
	invs := enginetest.ReadLog(t, s.log)
	if id, ok := invs[len(invs)-1].Flag("--resume"); ok {
		t.Errorf("a refused /resume changed the session: --resume %s", id)
	}
}

// TestResumeNeedsApprover: with permissions.approvers set, only an
// approver takes a session this conversation did not start; one it had
// before anyone may take again.
func TestResumeNeedsApprover(t *testing.T) {
	s := newSessionsHarness(t, func(o *core.Options) { o.Permissions.Approvers = []string{"rec:bob"} })
	if got := s.ask("alice", "/resume 3565"); !strings.Contains(got, "🔒 Session `356511aa`: only an approver may take a session this conversation did not start") {
		t.Fatalf("alice's /resume: %q", got)
	}
	if got := s.ask("bob", "/resume 3565"); !strings.Contains(got, "now continues session `356511aa`") {
		t.Fatalf("bob's /resume: %q", got)
	}
	if got := s.ask("bob", "/resume db2e"); !strings.Contains(got, "now continues session `db2e0271`") {
		t.Fatalf("bob's second /resume: %q", got)
	}
	if got := s.ask("alice", "/resume 3565"); !strings.Contains(got, "now continues session `356511aa`") {
		t.Errorf("alice's /resume of a session the conversation had: %q", got)
	}
}

// askingRecorder is the recorder with buttons: it keeps the questions.
type askingRecorder struct {
	*recorder
	asked chan core.Question
}

func (a *askingRecorder) Ask(_ context.Context, q core.Question) (core.MessageRef, error) {
	a.asked <- q
	return core.MessageRef{Channel: q.Place.Channel, ID: "q1"}, nil
}

func (a *askingRecorder) Settle(context.Context, core.MessageRef, string) error { return nil }

// TestSessionsContinueButton: on a platform with buttons /sessions has a
// Continue button per session; a click resumes it, as /resume does.
func TestSessionsContinueButton(t *testing.T) {
	s := newSessionsHarness(t, nil)
	s.stop()
	ask := &askingRecorder{recorder: s.rec, asked: make(chan core.Question, 1)}
	s.startWith(ask)
	s.say("alice", "/sessions")
	q := <-ask.asked
	if !strings.Contains(q.Text, "• `db2e0271` · ") || len(q.Choices) != 2 || q.Choices[1].Label != "Continue db2e0271" {
		t.Fatalf("question %q with %+v", q.Text, q.Choices)
	}
	res := s.d.HandleAction(context.Background(), core.Action{Platform: "rec", Channel: "C1", User: "mallory", Data: q.Choices[1].Data})
	if res.Err == nil {
		t.Errorf("a click by someone not allowed resumed: %+v", res)
	}
	res = s.d.HandleAction(context.Background(), core.Action{Platform: "rec", Channel: "C1", User: "alice", UserName: "Alice",
		Question: core.MessageRef{Channel: "C1", ID: "q1"}, Data: q.Choices[1].Data})
	if res.Err != nil || !strings.Contains(res.Settled, "now continues session `db2e0271`") || !strings.HasSuffix(res.Settled, "— Alice") {
		t.Fatalf("click: %+v", res)
	}
	s.say("alice", "go on")
	s.rec.waitText("echo: go on")
	invs := enginetest.ReadLog(t, s.log)
	if id, _ := invs[len(invs)-1].Flag("--resume"); id != recordedTwo {
		t.Errorf("after the click the turn ran with --resume %q, want %s", id, recordedTwo)
	}
}

// idLister is Claude Code (for its runs) whose sessions are listed as
// given: ids of another CLI's form, such as OpenCode's.
type idLister struct {
	*engine.ClaudeCode
	sessions []engine.Session
}

func (l idLister) Sessions(string, int) ([]engine.Session, error) { return l.sessions, nil }

func (l idLister) SessionsElsewhere(string, string) ([]engine.Session, error) { return nil, nil }

func (l idLister) ResumeCommand(workdir, id string) string {
	return "cd " + workdir + " && opencode --session " + id
}

// TestResumeOpenCodeIDs: ids that are not hex (OpenCode's ses_… ones,
// mixed case) are resumed by a prefix, and the next run resumes them.
func TestResumeOpenCodeIDs(t *testing.T) {
	const older, newer = "ses_dca706badffeeDUWfOqfg1reQx", "ses_dca7047edffeAht8QQwudpghuw"
	s := newSessionsHarness(t, func(o *core.Options) {
		l := idLister{ClaudeCode: o.Engines["claude-code"].(*engine.ClaudeCode), sessions: []engine.Session{
			{ID: newer, Written: time.Now(), Prompts: 1, FirstPrompt: "elsewhere"},
			{ID: older, Written: time.Now().Add(-time.Minute), Prompts: 2, FirstPrompt: "hello oc"},
		}}
		o.Engines["claude-code"] = l
	})
	if got := s.ask("alice", "/sessions"); !strings.Contains(got, "• `ses_dca706` · ") || !strings.Contains(got, "• `ses_dca704` · ") {
		t.Errorf("/sessions: %q, want the short ids told apart", got)
	}
	if got := s.ask("alice", "/resume ses_"); !strings.Contains(got, "is the start of 2 sessions") {
		t.Errorf("/resume ses_: %q, want it ambiguous", got)
	}
	if got := s.ask("alice", "/resume ses_dca706"); !strings.Contains(got, "now continues session `ses_dca706`") {
		t.Fatalf("/resume ses_dca706: %q", got)
	}
	s.say("alice", "go on")
	s.rec.waitText("echo: go on")
	invs := enginetest.ReadLog(t, s.log)
	if id, _ := invs[len(invs)-1].Flag("--resume"); id != older {
		t.Errorf("the next run resumed %q, want %s", id, older)
	}
}

// TestSessionsCursorNotSupported: golem reads no sessions of Cursor's
// CLI, and /sessions, /resume and /session say so and change nothing.
func TestSessionsCursorNotSupported(t *testing.T) {
	h := newHarness(t, core.Limits{MaxLen: 4000}, func(o *core.Options) {
		o.Engines = map[string]engine.Engine{"cursor": engine.NewCursor(engine.Config{Command: enginetest.Build(t)})}
		o.DefaultEngine = "cursor"
	})
	s := &sessionsHarness{harness: h}
	for _, cmd := range []string{"/sessions", "/resume db2e0271", "/session"} {
		if got := s.ask("alice", cmd); !strings.Contains(got, "golem cannot list the sessions of **cursor**") {
			t.Errorf("%s: %q", cmd, got)
		}
	}
	conv, err := h.store.Conversation(core.KeyFor(core.Message{Platform: "rec", Channel: "C1"}, h.opts.Scope))
	if err != nil || conv.SessionID != "" {
		t.Errorf("the conversation's session is %q (%v), want none", conv.SessionID, err)
	}
}
