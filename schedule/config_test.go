package schedule_test

import (
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/schedule"
)

// TestDeclareJobs: bot.yaml's jobs are added, kept with their runs' record
// when declared again, removed when no longer declared, run as the
// operator's, and cannot be deleted from the chat.
func TestDeclareJobs(t *testing.T) {
	b := newBed(t, "", nil, schedule.Options{})
	jobs := []schedule.Job{{ID: "nightly", Conversation: "slack:T1:C1", Schedule: "0 9 * * *", Prompt: "check the build"},
		{ID: "weekly", Conversation: "slack:T1:C1", Schedule: "@weekly", Prompt: "sum up the week", User: "U1"}}
	if err := b.book.Declare(jobs); err != nil {
		t.Fatal(err)
	}
	b.start()
	b.advance(time.Minute) // 09:00
	p := b.runner.next(t)
	if p.Header != "⏰ nightly · 09:00" || p.Text != "check the build" || !p.Operator || p.Channel != "C1" || p.Platform != "slack" {
		t.Errorf("the job's run %+v", p)
	}
	if a := b.command("unschedule", "nightly"); !strings.Contains(a, "declared in bot.yaml") {
		t.Errorf("/unschedule of a job: %q", a)
	}
	if l := b.command("schedules", ""); !strings.Contains(l, "set in bot.yaml") || !strings.Contains(l, "weekly") {
		t.Errorf("/schedules = %q", l)
	}
	eventually(t, "the run recorded", func() bool {
		sc, _, _ := b.st.Schedule("nightly")
		return sc.LastOutcome == "done"
	})
	if err := b.book.Declare(jobs[:1]); err != nil { // weekly removed, nightly kept
		t.Fatal(err)
	}
	if sc, found, _ := b.st.Schedule("nightly"); !found || sc.LastOutcome != "done" || sc.Fired.IsZero() {
		t.Errorf("declared again, nightly lost its record: %+v", sc)
	}
	if _, found, _ := b.st.Schedule("weekly"); found {
		t.Error("a job no longer declared is kept")
	}
	id := between(b.command("every", "@daily p"), "`", "`")
	if err := b.book.Declare([]schedule.Job{{ID: id, Conversation: "slack:T1:C1", Schedule: "@daily", Prompt: "p"}}); err == nil ||
		!strings.Contains(err.Error(), "set from the chat has that id") {
		t.Errorf("a job with a chat schedule's id: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := schedule.DefaultConfig().Validate("schedules"); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	c := schedule.DefaultConfig()
	c.Jobs = []schedule.Job{{ID: "x", Conversation: "slack:T:C", Schedule: "@every 10s", Prompt: "p"}}
	if err := c.Validate("schedules"); err == nil || !strings.Contains(err.Error(), "schedules.jobs[0].schedule: @every 10s is too often") {
		t.Errorf("a job under min_interval: %v", err)
	}
	o, err := schedule.DefaultConfig().Options()
	if err != nil || o.CatchUp != time.Hour || o.BusyWait != time.Minute || o.Max != 20 || o.Zone != time.UTC {
		t.Errorf("options %+v, %v", o, err)
	}
	c = schedule.DefaultConfig()
	c.CatchUp, c.BusyWait = 0, 0
	if o, _ := c.Options(); o.CatchUp >= 0 || o.BusyWait >= 0 {
		t.Errorf("catch_up: 0s and busy_wait: 0s are never and not at all, not the defaults: %+v", o)
	}
}
