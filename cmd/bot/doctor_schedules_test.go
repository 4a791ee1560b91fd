package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/store"
)

// TestDoctorListsSchedules: doctor counts the schedules in the store and
// names the next run.
func TestDoctorListsSchedules(t *testing.T) {
	doctorEnv(t)
	db := filepath.Join(t.TempDir(), "golem.db")
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := store.ParseKey("slack:T1:C1")
	at := time.Now().Add(3 * time.Hour).Truncate(time.Minute)
	for _, sc := range []store.Schedule{
		{ID: "a1b2", Key: key, Spec: "@daily", Prompt: "p", Created: time.Now(), Paused: true},
		{ID: "c3d4", Key: key, At: at, Prompt: "p", Created: time.Now()},
	} {
		if err := st.SaveSchedule(sc); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	out, code := doctor(t, testLimits, fakeCLI(t, `echo 1.0`), "store: "+db+"\n")
	l := line(out, "schedules")
	want := "2 schedules (1 paused, 0 from bot.yaml); next run " + at.UTC().Format("Mon 2 Jan 2006 15:04") + " UTC (`c3d4`)"
	if code != 0 || !strings.HasPrefix(l, "ok ") || !strings.Contains(l, want) {
		t.Fatalf("exit %d, line %q; want %q:\n%s", code, l, want, out)
	}
}
