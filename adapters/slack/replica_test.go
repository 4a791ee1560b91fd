package slack

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/slack/slacktest"
	"github.com/golem-chat/golem/cluster"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/clustertest"
	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/internal/nettest"
	"github.com/golem-chat/golem/internal/statetest"
)

// startReplica runs an adapter of replica r on fake, handing what it gets
// to rec.
func startReplica(t *testing.T, fake *slacktest.Server, r cluster.Replica, rec recorder, edit ...func(*Options)) {
	t.Helper()
	opts := Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: fake.URL,
		Inbox: core.Inbox{Dir: t.TempDir()}, Replica: r}
	for _, e := range edit {
		e(&opts)
	}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx, rec) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
}

// Every replica holds a Socket Mode connection while it is in the cluster,
// and Slack spreads the events over them; a replica cut off from etcd
// closes its own, so that every event goes to a replica that can keep
// it, and opens it again once it is back.
func TestReplicaOutOfTheClusterClosesItsSocket(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	proxy := nettest.NewProxy(t, etcd.Endpoints[0])
	ttl := 2 * time.Second
	a := clustertest.Join(t, proxy.Addr, "a", ttl)
	b := clustertest.Join(t, etcd.Endpoints[0], "b", ttl)
	fake := slacktest.New(slacktest.Options{AckTimeout: time.Second})
	defer fake.Close()
	recA, recB := make(recorder, 100), make(recorder, 100)
	startReplica(t, fake, a, recA)
	startReplica(t, fake, b, recB)
	if !fake.Wait(10*time.Second, func() bool { return fake.Open() == 2 }) {
		t.Fatalf("%d sockets open, want one per replica", fake.Open())
	}
	for i := range 2 {
		deliver(t, fake, slacktest.Event{User: "U1", Channel: "C1", Text: fmt.Sprintf("%s before %d", mention, i)})
	}
	recA.next(t)
	recB.next(t)

	proxy.Cut()
	cut := time.Now()
	if !fake.Wait(10*time.Second, func() bool { return fake.Open() == 1 }) {
		t.Fatal("the replica cut off from etcd kept its socket open")
	}
	t.Logf("the cut-off replica closed its socket %v after the cut", time.Since(cut).Round(10*time.Millisecond))
	for i := range 4 {
		deliver(t, fake, slacktest.Event{User: "U1", Channel: "C1", Text: fmt.Sprintf("%s during %d", mention, i)})
		if m := recB.next(t); m.Text != fmt.Sprintf("during %d", i) {
			t.Fatalf("replica b got %q", m.Text)
		}
	}
	select {
	case m := <-recA:
		t.Fatalf("the cut-off replica got %q", m.Text)
	default:
	}

	proxy.Heal()
	if !fake.Wait(20*time.Second, func() bool { return fake.Open() == 2 }) {
		t.Fatal("the replica back in the cluster did not connect again")
	}
}

// A replica that left the cluster while a message's file was still
// downloading (acked to Slack, so never sent again) left it in its
// journal; another replica hands it on, and empties that journal.
func TestAGoneReplicasJournalIsHandedOn(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	ra := clustertest.Join(t, etcd.Endpoints[0], "a", 2*time.Second)
	fake := slacktest.New(slacktest.Options{})
	defer fake.Close()
	state := &statetest.State{}
	journalOf := func(name string) string { return "slack.pending/" + name }
	newReplica := func(r cluster.Replica) *Adapter {
		a, err := New(Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: fake.URL,
			Inbox: core.Inbox{Dir: t.TempDir()}, State: state, JournalKey: journalOf(r.Name()), JournalOf: journalOf, Replica: r})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}

	a := newReplica(ra)
	ctxA, stopA := context.WithCancel(context.Background())
	doneA := make(chan error, 1)
	go func() { doneA <- a.Start(ctxA, make(recorder, 10)) }()
	if !fake.Wait(10*time.Second, func() bool { return fake.Open() == 1 }) {
		t.Fatal("replica a did not connect")
	}
	f := fake.AddFile("notes.txt", "text/plain", []byte("the notes"))
	hold := make(chan struct{})
	fake.Fail("files.info", 1, slacktest.Failure{Until: hold})
	d := deliver(t, fake, slacktest.Event{Type: "message", ChannelType: "im", SubType: "file_share", User: "U1", Channel: "D1",
		Text: "see the file", Files: []map[string]any{{"id": f["id"], "file_access": "check_file_info"}}})
	if !fake.Wait(10*time.Second, func() bool { _, acked := fake.Acked(d.EnvelopeID); return acked && fake.Holding("files.info") == 1 }) {
		t.Fatal("the envelope was not acked with its file's download held")
	}
	stopA() // replica a stops with the download cut short: the message stays in its journal
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	close(hold)
	if raw, _ := state.Load(journalOf("a")); raw == nil {
		t.Fatal("replica a's journal is empty: nothing to hand on")
	}
	if err := ra.Close(); err != nil { // gone from the cluster
		t.Fatal(err)
	}

	rb := clustertest.Join(t, etcd.Endpoints[0], "b", 2*time.Second)
	recB := make(recorder, 10)
	startReplica(t, fake, rb, recB, func(o *Options) {
		o.State, o.JournalKey, o.JournalOf = state, journalOf("b"), journalOf
	})
	m := recB.next(t)
	if m.Text != "see the file" || len(m.Attachments) != 1 {
		t.Fatalf("replica b handed on %q with %d attachments", m.Text, len(m.Attachments))
	}
	// The journal is emptied once its events are handed on, after the
	// handler has the message (see journal.Adopt): it may lag it a little.
	if !fake.Wait(10*time.Second, func() bool { raw, _ := state.Load(journalOf("a")); return raw == nil }) {
		raw, _ := state.Load(journalOf("a"))
		t.Errorf("replica a's journal still holds %s", raw)
	}
}

// Past Slack's limit of connections per app (MaxConnections, 10 at Slack)
// the replica one too many is told too_many_websockets at each try:
// slack-go would reopen at once, thousands of times a second; the adapter
// waits longer and longer instead, and connects once a place frees.
func TestOneConnectionTooManyWaits(t *testing.T) {
	fake := slacktest.New(slacktest.Options{MaxConnections: 1})
	defer fake.Close()
	first, err := New(Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: fake.URL, Inbox: core.Inbox{Dir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- first.Start(ctx, make(recorder, 10)) }()
	if !fake.Wait(10*time.Second, func() bool { return fake.Open() == 1 }) {
		t.Fatal("the first replica did not connect")
	}
	rec := make(recorder, 10)
	startReplica(t, fake, cluster.NewLocal("second"), rec)
	time.Sleep(4 * time.Second)
	if n := fake.Refused(); n == 0 || n > 30 {
		t.Errorf("the replica one too many tried %d times in 4 s, want a few", n)
	}
	t.Logf("refused %d times in 4 s", fake.Refused())
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !fake.Wait(70*time.Second, func() bool { return fake.Open() == 1 && fake.Connects() == 2 }) {
		t.Fatal("the waiting replica did not connect once a place was free")
	}
	deliver(t, fake, slacktest.Event{User: "U1", Channel: "C1", Text: mention + " now"})
	if m := rec.next(t); m.Text != "now" {
		t.Fatalf("got %q", m.Text)
	}
}
