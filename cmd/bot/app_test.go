package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/config"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/worktree"
)

func TestQueueDepthZeroLetsNoMessageWait(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Workspace, cfg.Store, cfg.Skills = dir, filepath.Join(dir, "golem.db"), ""
	cfg.Engines["claude-code"].Base().Command = enginetest.Build(t)
	cfg.QueueDepth = 0
	a, err := newApp(cfg, newLogger(io.Discard, "error"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // stop the hanging turn at once
		_ = a.d.Close(ctx)
		_ = a.store.Close()
	})
	say := func(text string) *core.EventQueue {
		q := core.NewEventQueue()
		a.d.Handle(context.Background(), core.Message{Platform: "http", Channel: "c", User: "u", Text: text, Sink: q.Push})
		return q
	}
	say("!hang")
	q := say("second")
	select {
	case <-q.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("the second message was not answered: it waits")
	}
	if evs := q.Take(); len(evs) != 1 || evs[0].Type != parser.Error || !strings.Contains(evs[0].Message, "still working") {
		t.Errorf("with queue_depth 0 a second message got %+v, want to be told the conversation is busy", evs)
	}
}

func TestWorktreeIsolationNeedsARepository(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Workspace, cfg.Store, cfg.Skills = dir, filepath.Join(dir, "data", "golem.db"), ""
	cfg.Isolation = worktree.Worktree
	if _, err := newApp(cfg, newLogger(io.Discard, "error"), nil); err == nil || !strings.HasPrefix(err.Error(), "isolation: ") {
		t.Fatalf("isolation: worktree on a plain folder started (err %v), want refused naming isolation", err)
	}
	cfg.Isolation = worktree.Shared
	a, err := newApp(cfg, newLogger(io.Discard, "error"), nil)
	if err != nil {
		t.Fatalf("isolation: shared needs no repository: %v", err)
	}
	_ = a.close()
}
