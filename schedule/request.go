package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// Request is what /every or /at asks for, parsed.
type Request struct {
	Spec   Spec
	Prompt string
	Name   string // --name NAME; "" = the id
	// Session is "continue" (--continue), "fresh" (--fresh) or "" for
	// schedules.session.
	Session string
}

// Sessions: a fresh agent session each run, or the conversation's own.
const (
	SessionFresh    = "fresh"
	SessionContinue = "continue"
)

// ParseEvery reads the arguments of /every: [TZ=Zone] SCHEDULE [--name
// NAME] [--continue|--fresh] PROMPT, SCHEDULE a cron expression in quotes,
// a descriptor or @every DURATION. zone is schedules.timezone.
func ParseEvery(args string, zone *time.Location, minInterval time.Duration) (Request, error) {
	loc, rest, err := zoneWord(args, zone)
	if err != nil {
		return Request{}, err
	}
	var expr string
	switch {
	case rest == "":
		return Request{}, errors.New(`the schedule is missing: /every "0 9 * * 1-5" PROMPT, /every @daily PROMPT or /every "@every 2h" PROMPT`)
	case isQuote([]rune(rest)[0]):
		expr, rest, err = quoted(rest)
		if err != nil {
			return Request{}, err
		}
	case strings.HasPrefix(rest, "@every "):
		_, after := cutWord(rest)
		var d string
		d, rest = cutWord(after)
		expr = "@every " + d
	case rest[0] == '@':
		expr, rest = cutWord(rest)
	case bareCron(rest):
		// Five fields of digits and * / , - ? without quotes (Discord's
		// options drop them): no prompt begins so.
		f := strings.Fields(rest)
		expr = strings.Join(f[:5], " ")
		for range 5 {
			_, rest = cutWord(rest)
		}
	default:
		return Request{}, fmt.Errorf(`put the schedule in quotes: /every "0 9 * * 1-5" PROMPT (not %q)`, firstWord(rest))
	}
	spec, err := ParseSpec(expr, loc, minInterval)
	if err != nil {
		return Request{}, err
	}
	return withPrompt(spec, rest)
}

// ParseAt reads the arguments of /at: [TZ=Zone] TIME [--name NAME]
// [--continue|--fresh] PROMPT, TIME `2026-12-24 09:00`, `09:00` (the next
// one) or `in 2h`; now is the clock's time.
func ParseAt(args string, now time.Time, zone *time.Location) (Request, error) {
	loc, rest, err := zoneWord(args, zone)
	if err != nil {
		return Request{}, err
	}
	w := strings.Fields(rest)
	if len(w) == 0 {
		return Request{}, errors.New("the time is missing: /at 09:00 PROMPT, /at 2026-12-24 09:00 PROMPT or /at in 2h PROMPT")
	}
	var at time.Time
	var used int
	switch {
	case w[0] == "in" && len(w) > 1:
		d, err := time.ParseDuration(w[1])
		if err != nil || d <= 0 {
			return Request{}, fmt.Errorf("%q is not a duration like 30m or 2h", w[1])
		}
		at, used = now.Add(d), 2
	case len(w) > 1 && strings.Count(w[0], "-") == 2:
		t, err := time.ParseInLocation("2006-01-02 15:04", w[0]+" "+w[1], loc)
		if err != nil {
			return Request{}, fmt.Errorf("%q is not a date and time like 2026-12-24 09:00", w[0]+" "+w[1])
		}
		at, used = t, 2
	case strings.Contains(w[0], ":"):
		t, err := time.ParseInLocation("15:04", w[0], loc)
		if err != nil {
			return Request{}, fmt.Errorf("%q is not a time like 09:00", w[0])
		}
		n := now.In(loc)
		at = time.Date(n.Year(), n.Month(), n.Day(), t.Hour(), t.Minute(), 0, 0, loc)
		if !at.After(now) {
			at = at.AddDate(0, 0, 1)
		}
		used = 1
	default:
		return Request{}, fmt.Errorf("%q is not a time: /at 09:00, /at 2026-12-24 09:00 or /at in 2h", w[0])
	}
	if !at.After(now) {
		return Request{}, fmt.Errorf("%s is in the past", at.In(loc).Format("2006-01-02 15:04 MST"))
	}
	for range used {
		_, rest = cutWord(rest)
	}
	return withPrompt(Once(at, loc), rest)
}

// bareCron reports whether s begins with five words of cron's digits and
// signs.
func bareCron(s string) bool {
	f := strings.Fields(s)
	if len(f) < 5 {
		return false
	}
	for _, w := range f[:5] {
		if strings.Trim(w, "0123456789*/,-?") != "" {
			return false
		}
	}
	return true
}

// withPrompt reads the flags and the prompt after the schedule.
func withPrompt(spec Spec, rest string) (Request, error) {
	r := Request{Spec: spec}
	for {
		word, after := cutWord(rest)
		switch word {
		case "--continue":
			r.Session = SessionContinue
		case "--fresh":
			r.Session = SessionFresh
		case "--name":
			r.Name, after = cutWord(after)
			if !validName(r.Name) {
				return Request{}, errors.New("--name takes a short name of letters, digits, - and _ (at most 40)")
			}
		default:
			r.Prompt = strings.TrimSpace(rest)
			if r.Prompt == "" {
				return Request{}, errors.New("the prompt is missing: what should the agent be asked each time?")
			}
			return r, nil
		}
		rest = after
	}
}

func validName(s string) bool {
	if s == "" || len(s) > 40 {
		return false
	}
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '_' {
			return false
		}
	}
	return true
}

// zoneWord reads a leading TZ=Zone; zone when there is none.
func zoneWord(args string, zone *time.Location) (*time.Location, string, error) {
	rest := strings.TrimSpace(args)
	word, after := cutWord(rest)
	name, ok := strings.CutPrefix(word, "TZ=")
	if !ok {
		return zone, rest, nil
	}
	loc, err := LoadZone(name)
	if err != nil {
		return nil, "", err
	}
	return loc, after, nil
}

// LoadZone is the IANA time zone name, with an error that says so.
func LoadZone(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		return nil, fmt.Errorf("%q is not a time zone: name one like Europe/Berlin or UTC", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: name one like Europe/Berlin or UTC", name)
	}
	return loc, nil
}

func isQuote(r rune) bool {
	return r == '"' || r == '\'' || r == '“' || r == '”' || r == '‘' || r == '’'
}

// quoted cuts a leading quoted string (straight or typographic quotes,
// which phones put in) off s.
func quoted(s string) (inside, rest string, err error) {
	rs := []rune(s)
	for i := 1; i < len(rs); i++ {
		if isQuote(rs[i]) {
			return string(rs[1:i]), strings.TrimSpace(string(rs[i+1:])), nil
		}
	}
	return "", "", errors.New("the schedule's closing quote is missing")
}

func cutWord(s string) (word, rest string) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}

func firstWord(s string) string { w, _ := cutWord(s); return w }
