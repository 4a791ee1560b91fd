package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/golem-chat/golem/config"
)

// verdict is how one doctor check came out.
type verdict int

const (
	pass verdict = iota // usable
	note                // not a problem, worth knowing (a platform off, the store in use)
	fail                // golem cannot use it as configured; the text says what to do
)

func (v verdict) String() string {
	return [...]string{"ok", "--", "FAIL"}[v]
}

// finding is one line of `bot doctor`.
type finding struct {
	name string // "store", "engine claude-code", "slack"
	v    verdict
	text string
}

// doctorLimits bound the checks: each probe of the outside world (a CLI's
// --version, a platform's API, git) gets probe, and the whole run ends by
// total whatever hangs; tests shorten them.
type doctorLimits struct {
	probe, total time.Duration
}

var defaultDoctorLimits = doctorLimits{probe: 5 * time.Second, total: 25 * time.Second}

// errDoctor is what `bot doctor` returns when a check failed.
var errDoctor = errors.New("doctor: something configured is not usable; see the FAIL lines")

// runDoctor checks that what the configuration asks for can work: it
// prints one line per check, then a summary, and fails when any check
// failed. It changes nothing: it creates no file or folder and never
// starts a platform or an agent's turn.
func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer, lim doctorLimits) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	load := configFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("doctor: unexpected argument %q", fs.Arg(0))
	}
	path := fs.Lookup("config").Value.String()
	cfg, err := load()
	var found []finding
	if err != nil {
		found = []finding{{"config", fail, err.Error() + " — fix that key and run bot doctor again"}}
	} else {
		found = append([]finding{{"config", pass, path + " is valid"}}, diagnose(ctx, cfg, lim)...)
	}
	secrets := cfg.Secrets()
	counts := map[verdict]int{}
	for _, f := range found {
		counts[f.v]++
		fmt.Fprintf(stdout, "%-4s  %-20s %s\n", f.v, f.name, hide(f.text, secrets))
	}
	fmt.Fprintf(stdout, "\n%d checks: %d ok, %d notes, %d failed\n", len(found), counts[pass], counts[note], counts[fail])
	if counts[fail] > 0 {
		return errDoctor
	}
	return nil
}

// check is one of diagnose's checks; it may return several findings (one
// per channel workdir, say).
type check func(ctx context.Context) []finding

// diagnose runs every check of cfg at once, each probe bounded by
// lim.probe, and returns their findings in a fixed order by lim.total: a
// check still running then is reported as a failure.
func diagnose(ctx context.Context, cfg config.Config, lim doctorLimits) []finding {
	checks := []struct {
		name string
		run  check
	}{
		{"store", func(ctx context.Context) []finding { return checkStore(cfg) }},
		{"workspace", func(ctx context.Context) []finding { return checkWorkspaces(ctx, cfg, lim.probe) }},
		{"sandbox", func(ctx context.Context) []finding { return []finding{checkSandbox(ctx, cfg)} }},
	}
	for _, e := range enginesToCheck(cfg) {
		checks = append(checks, struct {
			name string
			run  check
		}{"engine " + e.spec.Name, func(ctx context.Context) []finding { return []finding{checkEngine(ctx, e, lim.probe)} }})
	}
	checks = append(checks, struct {
		name string
		run  check
	}{"http", func(context.Context) []finding { return []finding{checkHTTP(cfg)} }})
	for _, p := range platformChecks {
		checks = append(checks, struct {
			name string
			run  check
		}{p.name, func(ctx context.Context) []finding { return []finding{p.check(ctx, cfg, lim.probe)} }})
	}

	ctx, cancel := context.WithTimeout(ctx, lim.total)
	defer cancel()
	results := make([]chan []finding, len(checks))
	for i, c := range checks {
		results[i] = make(chan []finding, 1)
		go func() { results[i] <- c.run(ctx) }()
	}
	var out []finding
	for i, c := range checks {
		select {
		case fs := <-results[i]:
			out = append(out, fs...)
		case <-ctx.Done():
			out = append(out, finding{c.name, fail, fmt.Sprintf("no answer within %v; whatever it waits for hangs", lim.total)})
		}
	}
	return out
}

// platformCheck checks one chat platform's tokens; the wiring files fill
// platformChecks in, beside their remotePlatforms entry.
type platformCheck struct {
	name  string
	check func(ctx context.Context, cfg config.Config, probe time.Duration) finding
}

var platformChecks []platformCheck

// checkHTTP says where the HTTP API listens; config validation already
// refused an open address without a token.
func checkHTTP(cfg config.Config) finding {
	switch {
	case cfg.HTTP.Listen == "":
		return finding{"http", note, "off (http.listen is empty)"}
	case cfg.HTTP.Token != "":
		return finding{"http", pass, "listens on " + cfg.HTTP.Listen + "; every API call needs the bearer token"}
	default:
		return finding{"http", pass, "listens on " + cfg.HTTP.Listen + " (loopback, no token needed)"}
	}
}

func hide(text string, secrets []string) string {
	for _, s := range secrets {
		text = strings.ReplaceAll(text, s, "[redacted]")
	}
	return text
}

// platformFix is the text of a failed platform check: a refused token
// says where to get a new one, anything else to check api_url and the
// network.
func platformFix(err, refused error, newToken string) string {
	if errors.Is(err, refused) {
		return err.Error() + " — " + newToken
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return err.Error() + " — no answer in time: check api_url, the network and any proxy"
	}
	return err.Error() + " — check api_url and the network"
}
