package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sync"

	"github.com/golem-chat/golem/adapters/httpapi"
	"github.com/golem-chat/golem/core"
)

func runServe(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	load := configFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := load()
	if err != nil {
		return err
	}
	log := newLogger(stderr, cfg.LogLevel)
	a, err := newApp(cfg, log, nil)
	if err != nil {
		return err
	}
	adapters, err := a.platforms()
	if err != nil {
		return errors.Join(err, a.close())
	}
	if len(adapters) == 0 {
		return errors.Join(errors.New("nothing to serve: no platform has a token and http.listen is empty"), a.close())
	}

	// Adapters stop taking messages when ctx ends (SIGINT/SIGTERM, or one
	// platform failing for good); their Send and Edit keep working while
	// a.close lets running turns finish.
	ctx, stopPlatforms := context.WithCancel(ctx)
	defer stopPlatforms()
	var wg sync.WaitGroup
	failed := make(chan error, len(adapters))
	for _, ad := range adapters {
		a.d.Register(ad)
	}
	if a.member.convs != nil { // every platform registered: a takeover can post to any
		a.member.convs.Bind(a.d)
	}
	for _, ad := range adapters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := ad.Start(ctx, a.d); err != nil && ctx.Err() == nil {
				failed <- fmt.Errorf("%s: %w", ad.Platform(), err)
			}
		}()
		log.Info("platform started", "platform", ad.Platform())
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.cleanWorktrees(ctx)
	}()
	loop := make(chan struct{})
	go func() {
		defer close(loop)
		a.runSchedules(ctx)
	}()
	var runErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down: finishing running turns")
	case runErr = <-failed:
		log.Error("platform failed; shutting down", "err", runErr)
	}
	stopPlatforms()
	<-loop // its runs have given up waiting; their turns end with the dispatcher
	closeErr := a.close()
	wg.Wait()
	return errors.Join(runErr, closeErr)
}

// doctorLines are `bot doctor`'s checks of the running configuration,
// for the operator's page; the store shows as in use, by this bot.
func (a *app) doctorLines(ctx context.Context) []httpapi.DoctorLine {
	secrets := a.cfg.Secrets()
	var out []httpapi.DoctorLine
	for _, f := range diagnose(ctx, a.cfg, defaultDoctorLimits) {
		out = append(out, httpapi.DoctorLine{Verdict: f.v.String(), Name: f.name, Text: hide(f.text, secrets)})
	}
	return out
}

// healthy is /healthz: a replica without its etcd is not.
func (a *app) healthy() (bool, string) {
	if !a.member.live() {
		return false, "this replica has lost etcd: it starts no turn until it is back"
	}
	return true, ""
}

// platforms builds an adapter for every configured platform; one whose
// token is empty is off (said once in the log).
func (a *app) platforms() ([]core.Source, error) {
	var out []core.Source
	if a.cfg.HTTP.Listen != "" {
		files, err := dataPath(a.cfg, "http-files")
		if err != nil {
			return nil, err
		}
		replica := ""
		if a.member.convs != nil {
			replica = a.member.convs.Replica()
		}
		srv, err := httpapi.New(httpapi.Options{Listen: a.cfg.HTTP.Listen, Token: a.cfg.HTTP.Token, Logger: a.log,
			Metrics: a.metrics.Handler(), FilesDir: files, Healthy: a.healthy,
			Operator: a.d, Store: a.store, Replica: replica, Doctor: a.doctorLines})
		if err != nil {
			return nil, err
		}
		out = append(out, srv)
		a.log.Info("HTTP API and web chat", "url", "http://"+a.cfg.HTTP.Listen+"/")
	}
	for _, p := range remotePlatforms {
		ad, err := p.build(a)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s: %w", p.name, err)
		case ad == nil:
			a.log.Info("platform off: no token configured", "platform", p.name)
		default:
			out = append(out, ad)
		}
	}
	return out, nil
}

// remotePlatform builds one chat platform's adapter from the config, or
// returns nil when its token is empty.
type remotePlatform struct {
	name  string
	build func(a *app) (core.Adapter, error)
}

// remotePlatforms are filled in by the platforms' wiring files.
var remotePlatforms []remotePlatform
