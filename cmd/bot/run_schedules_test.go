package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/store"
)

// terminal is `bot run` running in the test, typed into through a pipe.
type terminal struct {
	typed  *io.PipeWriter
	out    *syncBuffer
	exited chan int
}

func startTerminal(t *testing.T, path, conversation string) *terminal {
	t.Helper()
	in, typed := io.Pipe()
	tm := &terminal{typed: typed, out: &syncBuffer{}, exited: make(chan int, 1)}
	var stderr syncBuffer
	go func() {
		tm.exited <- run(context.Background(), []string{"run", "--config", path, "--conversation", conversation}, in, tm.out, &stderr)
	}()
	t.Cleanup(func() {
		typed.Close()
		select {
		case <-tm.exited:
		case <-time.After(30 * time.Second):
			t.Errorf("bot run did not end; log:\n%s", stderr.String())
		}
	})
	return tm
}

// waitFor waits until the terminal shows what matches re, and returns the
// match.
func (tm *terminal) waitFor(t *testing.T, re string) []string {
	t.Helper()
	r := regexp.MustCompile(re)
	written := tm.out.changed()
	deadline := time.After(30 * time.Second)
	for {
		if m := r.FindStringSubmatch(tm.out.String()); m != nil {
			return m
		}
		select {
		case <-written:
		case <-deadline:
			t.Fatalf("the terminal shows no %q:\n%s", re, tm.out.String())
		}
	}
}

func (tm *terminal) quit(t *testing.T) {
	t.Helper()
	io.WriteString(tm.typed, "/quit\n")
	select {
	case code := <-tm.exited:
		if code != 0 {
			t.Fatalf("bot run exited %d:\n%s", code, tm.out.String())
		}
		tm.exited <- code // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("bot run did not quit")
	}
}

// TestRunFiresTerminalSchedules: a schedule set in `bot run` runs while
// the terminal is open, its answer printed there under its ⏰ line. What
// came due while no terminal was open follows schedules.catch_up at the
// next `bot run` of that conversation: a run missed a minute ago fires at
// once, a once missed by more is skipped with a note, a recurring one
// missed by more is recorded missed (its next run says so); another
// terminal conversation's schedule is left to its own terminal.
func TestRunFiresTerminalSchedules(t *testing.T) {
	dir := t.TempDir()
	config := fmt.Sprintf(`
engine: claude-code
workspace: ./ws
store: ./data/golem.db
engines:
  claude-code: {command: %q}
schedules:
  min_interval: 1s
  catch_up: 5m
`, enginetest.Build(t))
	path := filepath.Join(dir, "bot.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}

	tm := startTerminal(t, path, "live")
	io.WriteString(tm.typed, "/every \"@every 1s\" ping\n")
	id := tm.waitFor(t, "Scheduled `([0-9a-f]+)`")[1]
	tm.waitFor(t, "\n⏰ "+id+` · \d\d:\d\d\n\necho: ping\n> `)
	io.WriteString(tm.typed, "/pause "+id+"\n")
	tm.waitFor(t, "Schedule `"+id+"` paused")
	tm.quit(t)

	// While no terminal of conversation "away" is open, its runs come due.
	st, err := store.Open(filepath.Join(dir, "data", "golem.db"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	at := func(id, channel, spec string, created, once time.Time) store.Schedule {
		return store.Schedule{ID: id, Key: store.NewKey("console", "", channel, channel), Platform: "console", Channel: channel,
			Thread: channel, User: "console", Spec: spec, At: once, Prompt: "run " + id, Created: created}
	}
	for _, sc := range []store.Schedule{
		at("late", "away", "@every 1h", now.Add(-61*time.Minute), time.Time{}), // due a minute ago: within catch_up
		at("long", "away", "@every 1h", now.Add(-90*time.Minute), time.Time{}), // due 30 minutes ago: past it
		at("gone", "away", "", now.Add(-time.Hour), now.Add(-30*time.Minute)),  // a once, past it
		at("else", "elsewhere", "@every 1h", now.Add(-61*time.Minute), time.Time{}),
	} {
		if err := st.SaveSchedule(sc); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	tm = startTerminal(t, path, "away")
	tm.waitFor(t, `\n⏰ late · \d\d:\d\d\n\necho: run late\n> `)
	tm.waitFor(t, "`gone` \\(gone\\) was to run at .*skipped and forgotten")
	tm.quit(t)
	if strings.Contains(tm.out.String(), "run long") || strings.Contains(tm.out.String(), "run else") {
		t.Errorf("a run past catch_up, or of another conversation, ran:\n%s", tm.out.String())
	}

	st, err = store.Open(filepath.Join(dir, "data", "golem.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	check := func(id string, ok func(sc store.Schedule, found bool) bool) {
		t.Helper()
		sc, found, err := st.Schedule(id)
		if err != nil || !ok(sc, found) {
			t.Errorf("%s after the second bot run: %+v, found %t, %v", id, sc, found, err)
		}
	}
	check("late", func(sc store.Schedule, found bool) bool { return found && sc.LastOutcome == "done" })
	check("long", func(sc store.Schedule, found bool) bool {
		return found && sc.LastOutcome == "missed" && !sc.Missed.IsZero()
	})
	check("gone", func(_ store.Schedule, found bool) bool { return !found })
	check("else", func(sc store.Schedule, found bool) bool { return found && sc.Fired.IsZero() })
	check(id, func(sc store.Schedule, found bool) bool { return found && sc.Paused && sc.LastOutcome == "done" })
}
