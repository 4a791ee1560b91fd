package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/golem-chat/golem/store"
)

// Config is the schedules: section of bot.yaml.
type Config struct {
	Timezone    string        `yaml:"timezone"`     // IANA zone of schedules without TZ=; default UTC
	MinInterval time.Duration `yaml:"min_interval"` // the shortest @every; default 1m
	Session     string        `yaml:"session"`      // fresh (default) | continue
	BusyWait    time.Duration `yaml:"busy_wait"`    // how long a run waits for a busy conversation; default 1m, 0 not at all
	CatchUp     time.Duration `yaml:"catch_up"`     // a run missed this recently fires at start; default 1h, 0 never
	Max         int           `yaml:"max"`          // schedules per conversation; default 20
	Jobs        []Job         `yaml:"jobs"`         // the operator's schedules
}

// Job is one schedule the operator declares (schedules.jobs); the chat
// cannot delete it.
type Job struct {
	ID           string `yaml:"id"`           // letters, digits, - and _
	Conversation string `yaml:"conversation"` // a conversation key: platform:workspace:channel[:thread]
	Schedule     string `yaml:"schedule"`     // as /every takes it: "0 9 * * 1-5", "@daily", "@every 2h"
	Prompt       string `yaml:"prompt"`
	Timezone     string `yaml:"timezone"` // "" = schedules.timezone
	Session      string `yaml:"session"`  // "" = schedules.session
	// User runs it as that person of the platform (their access, budget
	// and usage); "" runs it as the operator's, with no access check.
	User string `yaml:"user"`
}

// DefaultConfig is the schedules: section an empty bot.yaml gives.
func DefaultConfig() Config {
	return Config{Timezone: "UTC", MinInterval: MinInterval, Session: SessionFresh, BusyWait: DefaultBusyWait,
		CatchUp: DefaultCatchUp, Max: DefaultMax}
}

// Validate checks c, naming the key of the first bad value under prefix
// ("schedules").
func (c Config) Validate(prefix string) error {
	zone, err := LoadZone(c.Timezone)
	if err != nil {
		return fmt.Errorf("%s.timezone: %w", prefix, err)
	}
	switch {
	case c.MinInterval <= 0:
		return fmt.Errorf("%s.min_interval: must be positive, like 1m", prefix)
	case c.Session != SessionFresh && c.Session != SessionContinue:
		return fmt.Errorf("%s.session: %q is not fresh or continue", prefix, c.Session)
	case c.BusyWait < 0:
		return fmt.Errorf("%s.busy_wait: must not be negative", prefix)
	case c.CatchUp < 0:
		return fmt.Errorf("%s.catch_up: must not be negative (0: a missed run never fires late)", prefix)
	case c.Max < 1:
		return fmt.Errorf("%s.max: must be at least 1", prefix)
	}
	seen := map[string]bool{}
	for i, j := range c.Jobs {
		at := fmt.Sprintf("%s.jobs[%d]", prefix, i)
		if !validName(j.ID) {
			return fmt.Errorf("%s.id: %q must be letters, digits, - and _ (at most 40)", at, j.ID)
		}
		if seen[j.ID] {
			return fmt.Errorf("%s.id: %q is declared twice", at, j.ID)
		}
		seen[j.ID] = true
		if _, err := jobKey(j.Conversation); err != nil {
			return fmt.Errorf("%s.conversation: %w", at, err)
		}
		loc := zone
		if j.Timezone != "" {
			if loc, err = LoadZone(j.Timezone); err != nil {
				return fmt.Errorf("%s.timezone: %w", at, err)
			}
		}
		if _, err := ParseSpec(j.Schedule, loc, c.MinInterval); err != nil {
			return fmt.Errorf("%s.schedule: %w", at, err)
		}
		if strings.TrimSpace(j.Prompt) == "" {
			return fmt.Errorf("%s.prompt: the prompt is missing", at)
		}
		if j.Session != "" && j.Session != SessionFresh && j.Session != SessionContinue {
			return fmt.Errorf("%s.session: %q is not fresh or continue", at, j.Session)
		}
	}
	return nil
}

// jobKey reads a job's conversation key.
func jobKey(s string) (store.Key, error) {
	k, err := store.ParseKey(s)
	if err != nil || k.Platform == "" || k.Channel == "" {
		return store.Key{}, fmt.Errorf("%q is not a conversation key like slack:T0123:C0456 or telegram::-100123", s)
	}
	return k, nil
}

// Options are the Book's options that c sets.
func (c Config) Options() (Options, error) {
	zone, err := LoadZone(c.Timezone)
	if err != nil {
		return Options{}, err
	}
	catchUp, busyWait := c.CatchUp, c.BusyWait
	if catchUp == 0 {
		catchUp = -1 // never
	}
	if busyWait == 0 {
		busyWait = -1 // skipped at once
	}
	return Options{Zone: zone, MinInterval: c.MinInterval, Session: c.Session, BusyWait: busyWait, CatchUp: catchUp, Max: c.Max}, nil
}

// Declare makes the store's operator schedules those of jobs: new ones
// are added, changed ones keep their runs' record, and those no longer
// declared are removed. A job whose id a chat schedule has is an error.
func (b *Book) Declare(jobs []Job) error {
	all, err := b.opts.Store.AllSchedules()
	if err != nil {
		return err
	}
	have := map[string]store.Schedule{}
	for _, sc := range all {
		have[sc.ID] = sc
	}
	now := b.clock.Now()
	declared := map[string]bool{}
	for _, j := range jobs {
		declared[j.ID] = true
		key, err := jobKey(j.Conversation)
		if err != nil {
			return fmt.Errorf("schedules.jobs: %s: %w", j.ID, err)
		}
		sc, found := have[j.ID]
		if found && !sc.Operator {
			return fmt.Errorf("schedules.jobs: %s: a schedule set from the chat has that id; choose another", j.ID)
		}
		if !found {
			sc = store.Schedule{ID: j.ID, Created: now, Operator: true}
		}
		if sc.Spec != j.Schedule || sc.TZ != j.Timezone {
			sc.Fired = time.Time{} // a new schedule: from now on
			sc.Created = now
		}
		sc.Key, sc.Platform, sc.Workspace, sc.Channel, sc.Thread = key, key.Platform, key.Workspace, key.Channel, key.Sub
		sc.Spec, sc.TZ, sc.Prompt, sc.User, sc.Name = j.Schedule, j.Timezone, j.Prompt, j.User, j.ID
		sc.Continue = j.Session == SessionContinue || j.Session == "" && b.opts.Session == SessionContinue
		if err := b.opts.Store.SaveSchedule(sc); err != nil {
			return err
		}
	}
	for id, sc := range have {
		if sc.Operator && !declared[id] {
			if err := b.opts.Store.DeleteSchedule(id); err != nil {
				return err
			}
		}
	}
	b.changed()
	return nil
}
