package discord

import (
	"context"
	"encoding/json"
	"time"

	"github.com/gorilla/websocket"
)

// Among replicas, one holds the gateway at a time: the one leading
// "discord". Discord sends a bot's events to its gateway session, and
// keeps those it could not deliver for a RESUME of that session, so the
// leader keeps the session (its id, resume URL and the sequence number of
// the last event it took) in the store, and the next leader resumes it
// instead of identifying afresh: the events sent while no replica held the
// gateway come again. One taken just before the kill may come twice;
// core's dedupe of message ids drops it. Slash commands and clicks reach
// the leader too; core forwards a click to the replica whose turn waits
// for it.

// sessionKey is where, in Options.State, the gateway session is kept.
const sessionKey = "discord.gateway"

// sessionEvery is how often, at most, the leader saves the session's
// sequence number while events come.
const sessionEvery = time.Second

// savedSession is a gateway session as the store keeps it.
// It carries the bot's and application's ids from READY, which a
// RESUME does not repeat.
type savedSession struct {
	ID        string `json:"id"`
	ResumeURL string `json:"resume_url"`
	Seq       int64  `json:"seq"`
	BotID     string `json:"bot_id"`
	AppID     string `json:"app_id"`
}

// sessionSaver saves the latest snapshot of the session off the gateway's
// goroutine, which must not wait for the store.
type sessionSaver struct {
	latest chan savedSession // holds at most the newest snapshot
	done   chan struct{}
}

// lead runs the gateway while this replica leads "discord", resuming the
// session the last leader left, until ctx ends or the gateway fails for
// good.
func (a *Adapter) lead(ctx context.Context, gateway func(context.Context, *gatewaySession) error) error {
	var failed error
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	a.opts.Replica.Lead(lctx, "discord", func(ctx context.Context) {
		s := a.loadSession()
		a.log.Info("discord: this replica holds the gateway", "resume", s.id != "")
		saver := a.startSaver()
		if failed = gateway(ctx, s); failed != nil {
			stop()
		}
		a.keepSession(s, true)
		a.stopSaver(saver)
	})
	return failed
}

// lastClose is the close code of a connection ended by ctx: among
// replicas one Discord can resume, so that the next leader takes the
// session over; alone a normal closure, which ends the session.
func (a *Adapter) lastClose() int {
	if a.opts.Replica != nil {
		return closeResumable
	}
	return websocket.CloseNormalClosure
}

func (a *Adapter) loadSession() *gatewaySession {
	s := &gatewaySession{}
	if a.opts.State == nil {
		return s
	}
	raw, err := a.opts.State.Load(sessionKey)
	if err != nil {
		a.log.Warn("discord: the last leader's gateway session cannot be read; identifying afresh", "err", err)
		return s
	}
	var saved savedSession
	if raw != nil && json.Unmarshal(raw, &saved) == nil && saved.BotID != "" && saved.AppID != "" {
		s.id, s.resumeURL = saved.ID, saved.ResumeURL
		s.seq.Store(saved.Seq)
		a.mu.Lock()
		a.botID, a.appID = saved.BotID, saved.AppID
		a.mu.Unlock()
	}
	return s
}

// keepSession hands the session to the saver when it is due (now, with
// force); called on the gateway's goroutine.
func (a *Adapter) keepSession(s *gatewaySession, force bool) {
	a.mu.Lock()
	saver := a.saver
	a.mu.Unlock()
	if saver == nil || (!force && time.Since(s.saved) < sessionEvery) {
		return
	}
	s.saved = time.Now()
	a.mu.Lock()
	snap := savedSession{ID: s.id, ResumeURL: s.resumeURL, Seq: s.seq.Load(), BotID: a.botID, AppID: a.appID}
	a.mu.Unlock()
	select {
	case <-saver.latest: // an older snapshot not yet saved: this one replaces it
	default:
	}
	saver.latest <- snap
}

// startSaver starts saving the sessions keepSession hands over; nil
// without a store.
func (a *Adapter) startSaver() *sessionSaver {
	if a.opts.State == nil {
		return nil
	}
	sv := &sessionSaver{latest: make(chan savedSession, 1), done: make(chan struct{})}
	a.mu.Lock()
	a.saver = sv
	a.mu.Unlock()
	go func() {
		defer close(sv.done)
		for snap := range sv.latest {
			raw, _ := json.Marshal(snap)
			if err := a.opts.State.Save(sessionKey, raw); err != nil {
				a.log.Warn("discord: saving the gateway session failed", "err", err)
			}
		}
	}()
	return sv
}

// stopSaver waits until sv has saved the last snapshot handed to it.
func (a *Adapter) stopSaver(sv *sessionSaver) {
	if sv == nil {
		return
	}
	a.mu.Lock()
	a.saver = nil
	a.mu.Unlock()
	close(sv.latest)
	<-sv.done
}
