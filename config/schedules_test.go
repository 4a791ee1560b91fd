package config

import (
	"strings"
	"testing"
	"time"
)

func TestSchedules(t *testing.T) {
	c, err := Load(writeConfig(t, `schedules:
  timezone: Europe/Berlin
  min_interval: 10s
  session: continue
  busy_wait: 30s
  catch_up: 0s
  max: 5
  jobs:
    - id: nightly
      conversation: "slack:T1:C1"
      schedule: "0 9 * * 1-5"
      prompt: check the nightly build
`), false)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Schedules
	if s.Timezone != "Europe/Berlin" || s.MinInterval != 10*time.Second || s.Session != "continue" || s.BusyWait != 30*time.Second ||
		s.CatchUp != 0 || s.Max != 5 || len(s.Jobs) != 1 || s.Jobs[0].Prompt != "check the nightly build" {
		t.Errorf("schedules = %+v", s)
	}
	if d := Default().Schedules; d.Timezone != "UTC" || d.BusyWait != time.Minute || d.CatchUp != time.Hour || d.Max != 20 || d.Session != "fresh" {
		t.Errorf("the defaults are %+v", d)
	}
	for body, want := range map[string]string{
		"schedules: {timezone: Mars/Base}\n": `schedules.timezone: unknown time zone "Mars/Base"`,
		"schedules: {session: sometimes}\n":  `schedules.session: "sometimes" is not fresh or continue`,
		"schedules: {max: 0}\n":              `schedules.max: must be at least 1`,
		"schedules: {min_interval: 0s}\n":    `schedules.min_interval: must be positive`,
		"schedules: {catch_up: -1m}\n":       `schedules.catch_up: must not be negative`,
		"schedules: {busy_wait: soon}\n":     `busy_wait`,
		"schedules: {jobs: [{id: a, conversation: 'slack:T:C', schedule: '@daily'}]}\n":                                                                               `schedules.jobs[0].prompt: the prompt is missing`,
		"schedules: {jobs: [{id: a, conversation: 'slack:T:C', schedule: '61 * * * *', prompt: p}]}\n":                                                                `schedules.jobs[0].schedule:`,
		"schedules: {jobs: [{id: a, conversation: nowhere, schedule: '@daily', prompt: p}]}\n":                                                                        `schedules.jobs[0].conversation: "nowhere" is not a conversation key`,
		"schedules: {jobs: [{id: 'a b', conversation: 'slack:T:C', schedule: '@daily', prompt: p}]}\n":                                                                `schedules.jobs[0].id:`,
		"schedules: {jobs: [{id: a, conversation: 'slack:T:C', schedule: '@daily', prompt: p}, {id: a, conversation: 'slack:T:C', schedule: '@daily', prompt: p}]}\n": `schedules.jobs[1].id: "a" is declared twice`,
		"schedules: {timezon: UTC}\n": `timezon`,
	} {
		_, err := Load(writeConfig(t, body), false)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", body, err, want)
		}
	}
}
