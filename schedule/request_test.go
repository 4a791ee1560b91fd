package schedule

import (
	"strings"
	"testing"
	"time"
)

func mustZone(t testing.TB, name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestParseEvery(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	from := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC) // a Friday
	tests := []struct {
		args     string
		prompt   string
		name     string
		session  string
		zone     string
		describe string
		next     []string // the next runs after from, in the schedule's zone
		err      string   // what the error names
	}{
		{args: `"0 9 * * 1-5" check the nightly build`, prompt: "check the nightly build", zone: "UTC",
			describe: "every Monday to Friday at 09:00 (`0 9 * * 1-5`)", next: []string{"Mon 7 Dec 09:00", "Tue 8 Dec 09:00", "Wed 9 Dec 09:00"}},
		{args: `TZ=Europe/Berlin “0 9 * * 1-5” --name daily-build --continue summarize`, prompt: "summarize", name: "daily-build",
			session: SessionContinue, zone: "Europe/Berlin", next: []string{"Mon 7 Dec 09:00", "Tue 8 Dec 09:00", "Wed 9 Dec 09:00"}},
		{args: `@daily  say hi`, prompt: "say hi", zone: "UTC", describe: "every day at 00:00 (`@daily`)", next: []string{"Sat 5 Dec 00:00"}},
		{args: `@every 90m --fresh ping`, prompt: "ping", session: SessionFresh, zone: "UTC", describe: "every 90m", next: []string{"Fri 4 Dec 11:30", "Fri 4 Dec 13:00"}},
		{args: `"30 * * * *" tick`, prompt: "tick", zone: "UTC", describe: "every hour at :30 (`30 * * * *`)", next: []string{"Fri 4 Dec 10:30"}},
		{args: `"0 18 * * 1,3" gym`, prompt: "gym", zone: "UTC", describe: "every Monday, Wednesday at 18:00 (`0 18 * * 1,3`)"},
		{args: `"*/5 * * * *" x`, prompt: "x", zone: "UTC", describe: "`*/5 * * * *`"},
		{args: `"0 9 * * 1-5"`, err: "prompt is missing"},
		{args: `nine every weekday build`, err: "in quotes"},
		{args: `0 9 * * 1-5 build`, prompt: "build", zone: "UTC", describe: "every Monday to Friday at 09:00 (`0 9 * * 1-5`)"},
		{args: `"0 9 * *" build`, err: "not a schedule"},
		{args: `"0 9 * * 1-5 build`, err: "closing quote"},
		{args: `@every 10s x`, err: "too often"},
		{args: `@every soon x`, err: "not a duration"},
		{args: `@sometimes x`, err: "not a schedule"},
		{args: `TZ=Mars/Olympus @daily x`, err: `unknown time zone "Mars/Olympus"`},
		{args: `@daily --name "bad name" x`, err: "--name"},
		{args: ``, err: "schedule is missing"},
	}
	for _, tt := range tests {
		r, err := ParseEvery(tt.args, time.UTC, MinInterval)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseEvery(%s) = %v, want an error naming %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseEvery(%s): %v", tt.args, err)
			continue
		}
		if r.Prompt != tt.prompt || r.Name != tt.name || r.Session != tt.session || r.Spec.Loc.String() != tt.zone {
			t.Errorf("ParseEvery(%s) = %+v", tt.args, r)
		}
		if tt.describe != "" && r.Spec.Describe() != tt.describe {
			t.Errorf("%s: described %q, want %q", tt.args, r.Spec.Describe(), tt.describe)
		}
		at := from
		for _, want := range tt.next {
			at = r.Spec.Next(at)
			if got := at.In(r.Spec.Loc).Format("Mon 2 Jan 15:04"); got != want {
				t.Errorf("%s: next %s, want %s", tt.args, got, want)
			}
		}
	}
	// Berlin's 09:00 is 08:00 UTC in winter.
	r, _ := ParseEvery(`TZ=Europe/Berlin "0 9 * * *" x`, time.UTC, MinInterval)
	if got := r.Spec.Next(from).UTC().Format("15:04"); got != "08:00" || r.Spec.Loc != berlin && r.Spec.Loc.String() != "Europe/Berlin" {
		t.Errorf("09:00 in Berlin is %s UTC, want 08:00", got)
	}
}

func TestParseAt(t *testing.T) {
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		args, at, prompt, err string
	}{
		{args: "2026-12-24 09:00 open presents", at: "2026-12-24 09:00 UTC", prompt: "open presents"},
		{args: "09:00 standup", at: "2026-12-05 09:00 UTC", prompt: "standup"}, // the next one: tomorrow
		{args: "11:15 lunch", at: "2026-12-04 11:15 UTC", prompt: "lunch"},
		{args: "in 2h --name later check again", at: "2026-12-04 12:00 UTC", prompt: "check again"},
		{args: "TZ=Asia/Tokyo 2026-12-24 09:00 x", at: "2026-12-24 00:00 UTC", prompt: "x"},
		{args: "2026-01-01 09:00 x", err: "in the past"},
		{args: "in -2h x", err: "not a duration"},
		{args: "25:00 x", err: "not a time like"},
		{args: "tomorrow x", err: "not a time"},
		{args: "in 2h", err: "prompt is missing"},
		{args: "", err: "time is missing"},
	}
	for _, tt := range tests {
		r, err := ParseAt(tt.args, now, time.UTC)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseAt(%s) = %v, want an error naming %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseAt(%s): %v", tt.args, err)
			continue
		}
		if got := r.Spec.At.UTC().Format("2006-01-02 15:04 MST"); got != tt.at || r.Prompt != tt.prompt {
			t.Errorf("ParseAt(%s) = %s %q, want %s %q", tt.args, got, r.Prompt, tt.at, tt.prompt)
		}
		if r.Spec.Next(now) != r.Spec.At || !r.Spec.Next(r.Spec.At).IsZero() {
			t.Errorf("ParseAt(%s): a once runs once", tt.args)
		}
	}
}

func TestLatest(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	every, _ := ParseSpec("@every 1h", time.UTC, MinInterval)
	daily, _ := ParseSpec("0 9 * * *", time.UTC, MinInterval)
	for _, tt := range []struct {
		spec      Spec
		now, want time.Time
	}{
		{every, t0.Add(30 * time.Minute), time.Time{}},
		{every, t0.Add(3*time.Hour + 5*time.Minute), t0.Add(3 * time.Hour)},
		{every, t0.Add(24 * 365 * time.Hour), t0.Add(24 * 365 * time.Hour)},
		{daily, t0.Add(50 * time.Hour), t0.Add(48 * time.Hour)},
		{daily, t0.Add(time.Hour), time.Time{}},
	} {
		if got := tt.spec.Latest(t0, tt.now); !got.Equal(tt.want) {
			t.Errorf("%s: latest at %v = %v, want %v", tt.spec.Expr, tt.now, got, tt.want)
		}
	}
}

// FuzzParse feeds the commands' arguments to both parsers: an error or a
// request with a prompt, never a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`"0 9 * * 1-5" x`, `TZ=UTC @every 2h --name a x`, `in 2h x`, `2026-12-24 09:00 x`, `“`, `@every`, `TZ=`} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		if r, err := ParseEvery(s, time.UTC, MinInterval); err == nil && r.Prompt == "" {
			t.Errorf("ParseEvery(%q) has no prompt", s)
		}
		if r, err := ParseAt(s, now, time.UTC); err == nil && (r.Prompt == "" || !r.Spec.At.After(now)) {
			t.Errorf("ParseAt(%q) = %+v", s, r)
		}
	})
}
