// Package schedule is golem's scheduled prompts: "every weekday at 9,
// check the nightly build and summarize", set from the chat (/every, /at)
// or declared in bot.yaml, each run a turn of the conversation where it
// was set, as the person who set it.
//
// Spec is when a schedule runs (parsed with robfig/cron's parser); Book
// answers the chat commands and keeps the schedules in the store; Loop
// fires them, on one replica at a time (cluster.Replica.Lead), each firing
// recorded in the store with a compare (store.FireSchedule) so that an
// instant runs once however many replicas try.
package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MinInterval is the shortest @every a schedule may have unless
// schedules.min_interval lowers it.
const MinInterval = time.Minute

// parser reads 5-field cron expressions and descriptors (@daily, @every
// 1h); seconds are not offered.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Spec is when a schedule runs: a cron expression, a descriptor or
// @every, in a time zone; or once, at an instant.
type Spec struct {
	Expr string    // as the user wrote it; "" for a once
	At   time.Time // a once's instant
	Loc  *time.Location
	cron cron.Schedule
}

// ParseSpec reads expr ("0 9 * * 1-5", "@daily", "@every 2h") in loc. An
// @every shorter than minInterval is refused.
func ParseSpec(expr string, loc *time.Location, minInterval time.Duration) (Spec, error) {
	expr = strings.Join(strings.Fields(expr), " ")
	if expr == "" {
		return Spec{}, errors.New("the schedule is empty")
	}
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return Spec{}, errors.New("put TZ=Zone before the schedule, not inside it")
	}
	if rest, ok := strings.CutPrefix(expr, "@every "); ok {
		d, err := time.ParseDuration(rest)
		if err != nil {
			return Spec{}, fmt.Errorf("%q is not a duration like 30m or 2h", rest)
		}
		if d < minInterval {
			return Spec{}, fmt.Errorf("@every %s is too often: at least %s", rest, minInterval)
		}
	}
	sched, err := parser.Parse("CRON_TZ=" + loc.String() + " " + expr)
	if err != nil {
		return Spec{}, fmt.Errorf("%q is not a schedule: %v (5 fields: minute hour day-of-month month day-of-week, or @hourly, @daily, @weekly, @every 2h)", expr, err)
	}
	return Spec{Expr: expr, Loc: loc, cron: sched}, nil
}

// Once is the Spec of a single run at at.
func Once(at time.Time, loc *time.Location) Spec { return Spec{At: at, Loc: loc} }

// Next is the first instant strictly after t, zero when there is none (a
// once whose instant is not after t).
func (s Spec) Next(t time.Time) time.Time {
	if s.cron == nil {
		if s.At.After(t) {
			return s.At
		}
		return time.Time{}
	}
	return s.cron.Next(t)
}

// Latest is the last instant at or before now that comes after t, zero
// when none does: after a stop, the one run a catch-up may fire.
func (s Spec) Latest(t, now time.Time) time.Time {
	if d, ok := s.cron.(cron.ConstantDelaySchedule); ok { // no walk over a long downtime
		first := s.Next(t)
		if first.IsZero() || first.After(now) {
			return time.Time{}
		}
		return first.Add(now.Sub(first) / d.Delay * d.Delay)
	}
	var last time.Time
	for n := s.Next(t); !n.IsZero() && !n.After(now); n = s.Next(n) {
		last = n
	}
	return last
}

// Describe says when s runs, in words where the expression is a common
// one, always with the expression itself.
func (s Spec) Describe() string {
	if s.cron == nil {
		return "once, at " + s.At.In(s.Loc).Format("Mon 2 Jan 2006 15:04")
	}
	words := map[string]string{
		"@yearly": "every 1 January at 00:00", "@annually": "every 1 January at 00:00",
		"@monthly": "on the 1st of every month at 00:00", "@weekly": "every Sunday at 00:00",
		"@daily": "every day at 00:00", "@midnight": "every day at 00:00", "@hourly": "every hour, on the hour",
	}
	if w, ok := words[s.Expr]; ok {
		return fmt.Sprintf("%s (`%s`)", w, s.Expr)
	}
	if d, ok := strings.CutPrefix(s.Expr, "@every "); ok {
		return "every " + d
	}
	if w := cronWords(strings.Fields(s.Expr)); w != "" {
		return fmt.Sprintf("%s (`%s`)", w, s.Expr)
	}
	return fmt.Sprintf("`%s`", s.Expr)
}

var dayNames = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

// cronWords says the common shapes of 5 fields in words ("every Monday to
// Friday at 09:00"), "" for the others.
func cronWords(f []string) string {
	if len(f) != 5 || f[2] != "*" || f[3] != "*" {
		return ""
	}
	minute, errM := strconv.Atoi(f[0])
	if errM != nil || minute < 0 || minute > 59 {
		return ""
	}
	var at string
	if hour, err := strconv.Atoi(f[1]); err == nil && hour >= 0 && hour <= 23 {
		at = fmt.Sprintf("at %02d:%02d", hour, minute)
	} else if f[1] == "*" {
		at = fmt.Sprintf("at minute %d", minute)
		if f[4] == "*" {
			return fmt.Sprintf("every hour at :%02d", minute)
		}
	} else {
		return ""
	}
	day := func(s string) (string, bool) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 7 {
			return "", false
		}
		return dayNames[n], true
	}
	switch {
	case f[4] == "*":
		return "every day " + at
	case strings.Count(f[4], "-") == 1 && !strings.ContainsAny(f[4], ",/"):
		a, b, _ := strings.Cut(f[4], "-")
		da, ok1 := day(a)
		db, ok2 := day(b)
		if ok1 && ok2 {
			return fmt.Sprintf("every %s to %s %s", da, db, at)
		}
	case !strings.ContainsAny(f[4], "-/"):
		var names []string
		for _, p := range strings.Split(f[4], ",") {
			d, ok := day(p)
			if !ok {
				return ""
			}
			names = append(names, d)
		}
		return "every " + strings.Join(names, ", ") + " " + at
	}
	return ""
}
