package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/internal/clustertest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// memoryChat is the chat as a replica sees it that keeps what it heard in
// its own memory, as Telegram's adapter does: no other replica has it.
type memoryChat struct {
	*chat
	said []core.Said
	err  error
}

func (m *memoryChat) History(context.Context, core.Message, int) ([]core.Said, error) {
	return m.said, m.err
}
func (m *memoryChat) HistoryInMemory() {}

// A chat context that only the replica which received a message has goes
// with the message to the replica that runs it.
func TestAChatContextInMemoryGoesWithItsMessage(t *testing.T) {
	f := newFleet(t)
	f.context = core.ContextLimits{MaxMessages: 20, MaxChars: 8000}
	a, b := f.start("a", 5*time.Second), f.start("b", 5*time.Second)
	var said []core.Said // more than the context keeps: the newest go
	for i := range 40 {
		said = append(said, core.Said{Author: "Bob", Text: fmt.Sprint(i, strings.Repeat(" chatter", 250))})
	}
	said = append(said, core.Said{Author: "Ann", Text: "the nightly build broke at 9"})
	a.d.Register(&memoryChat{chat: f.chat, said: said})
	ctx := context.Background()
	b.d.Handle(ctx, msg("C1", 0, "!sleep 500ms\nfirst")) // b owns C1 while this runs
	f.waitRuns(1)
	a.d.Handle(ctx, msg("C1", 1, "!sleep 300ms\nwhat broke?"))
	mail, err := clustertest.Client(t, f.etcd.Endpoints[0]).Get(ctx, "golem/cluster/mail/", clientv3.WithPrefix())
	if err != nil || len(mail.Kvs) != 1 {
		t.Fatalf("the mailbox while b runs: %v, %v", mail, err)
	}
	if n := len(mail.Kvs[0].Value); n > 10_000 {
		t.Errorf("the message in the mailbox is %d bytes: more than its context keeps (8,000 characters)", n)
	}
	f.waitRuns(2)
	invs := enginetest.ReadLog(t, f.log)
	if got := invs[1].Prompt; !strings.Contains(got, "> Ann: the nightly build broke at 9") || !strings.HasSuffix(got, "what broke?") {
		t.Errorf("the prompt run on the owner:\n%s", got)
	}
	if owner := a.conv.Owner(core.KeyFor(msg("C1", 1, ""), "")); owner != "b" {
		t.Errorf("C1 is owned by %q, want b (the test did not run the message on the other replica)", owner)
	}
}

// What a chat context carries with its message is bounded by the
// context's limit as the prompt counts it: a message padded with what the
// prompt's line drops (control characters) carries no more than its line.
func TestAChatContextCarriedIsBoundedAsItsPromptIs(t *testing.T) {
	f := newFleet(t)
	f.context = core.ContextLimits{MaxMessages: 20, MaxChars: 8000}
	a, b := f.start("a", 5*time.Second), f.start("b", 5*time.Second)
	var said []core.Said
	for i := range 40 {
		said = append(said, core.Said{Author: "Bob", Text: strings.Repeat("\x01", 7990) + fmt.Sprint("line ", i)})
	}
	a.d.Register(&memoryChat{chat: f.chat, said: said})
	ctx := context.Background()
	b.d.Handle(ctx, msg("C1", 0, "!sleep 500ms\nfirst")) // b owns C1 while this runs
	f.waitRuns(1)
	a.d.Handle(ctx, msg("C1", 1, "!sleep 300ms\nwhat was said?"))
	mail, err := clustertest.Client(t, f.etcd.Endpoints[0]).Get(ctx, "golem/cluster/mail/", clientv3.WithPrefix())
	if err != nil || len(mail.Kvs) != 1 {
		t.Fatalf("the mailbox while b runs: %v, %v", mail, err)
	}
	if n := len(mail.Kvs[0].Value); n > 10_000 {
		t.Errorf("the message in the mailbox is %d bytes: more than its context keeps (8,000 characters)", n)
	}
	f.waitRuns(2)
	got := enginetest.ReadLog(t, f.log)[1].Prompt
	if !strings.Contains(got, "> Bob: line 20\n") || !strings.Contains(got, "> Bob: line 39\n") || strings.Contains(got, "line 19\n") {
		t.Errorf("the prompt run on the owner (want lines 20 to 39):\n%s", got)
	}
}

// A chat context that is empty where a message came (nothing said there,
// or the read failed) stays empty on the replica that runs it: that one
// does not read its own memory instead, which is another chat's view.
func TestAnEmptyChatContextInMemoryGoesWithItsMessage(t *testing.T) {
	for _, tc := range []struct {
		name string
		said []core.Said
		err  error
	}{
		{name: "nothing said", said: nil},
		{name: "read failed", err: errors.New("history: gone")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleet(t)
			f.context = core.ContextLimits{MaxMessages: 20, MaxChars: 8000}
			a, b := f.start("a", 5*time.Second), f.start("b", 5*time.Second)
			a.d.Register(&memoryChat{chat: f.chat, said: tc.said, err: tc.err})
			b.d.Register(&memoryChat{chat: f.chat, said: []core.Said{{Author: "Zed", Text: "heard on b only"}}})
			ctx := context.Background()
			b.d.Handle(ctx, msg("C1", 0, "!sleep 500ms\nfirst")) // b owns C1 while this runs
			f.waitRuns(1)
			a.d.Handle(ctx, msg("C1", 1, "what broke?"))
			f.waitRuns(2)
			if owner := a.conv.Owner(core.KeyFor(msg("C1", 1, ""), "")); owner != "b" {
				t.Fatalf("C1 is owned by %q, want b (the test did not run the message on the other replica)", owner)
			}
			invs := enginetest.ReadLog(t, f.log)
			if got := invs[1].Prompt; strings.Contains(got, "Chat context") || !strings.HasSuffix(got, "what broke?") {
				t.Errorf("the prompt run on b, for a message whose context was empty on a:\n%s", got)
			}
		})
	}
}
