package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/golem-chat/golem/adapters/discord/discordtest"
	"github.com/golem-chat/golem/cluster"
	"github.com/golem-chat/golem/internal/clustertest"
	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/internal/nettest"
	"github.com/golem-chat/golem/internal/statetest"
)

// One replica holds the gateway; when it is cut off from etcd, another
// takes over and RESUMEs the same gateway session, so the messages Discord
// sent meanwhile reach it instead of being lost to a fresh IDENTIFY.
func TestReplicasHandTheGatewayOver(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	proxy := nettest.NewProxy(t, etcd.Endpoints[0])
	ttl := 2 * time.Second
	ra := clustertest.Join(t, proxy.Addr, "a", ttl)
	rb := clustertest.Join(t, etcd.Endpoints[0], "b", ttl)
	fake := newFake(t, discordtest.Options{})
	state := &statetest.State{}
	recA, recB := make(recorder, 16), make(recorder, 16)
	startReplica := func(r *cluster.Etcd, rec recorder) {
		a := newAdapter(t, fake, Options{State: state, JournalKey: "discord.pending/" + r.Name(), Replica: r})
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
	startReplica(ra, recA)
	clustertest.WaitLeading(t, ra, "discord", wait)
	startReplica(rb, recB)
	if !fake.Wait(wait, func(v discordtest.View) bool { return v.Connected() && v.Sockets() == 1 }) {
		t.Fatal("the leader did not connect, or the other replica did too")
	}
	bot := fake.Options().BotUserID
	post := func(text string) {
		fake.Post(discordtest.UserMessage{Channel: "c1", Guild: "g1", User: "u1", Content: "<@" + bot + "> " + text, Mentions: []string{bot}})
	}
	post("before")
	if m := recA.next(t); m.Text != "before" {
		t.Fatalf("the leader got %q", m.Text)
	}
	var identifies, resumes int
	fake.Wait(wait, func(v discordtest.View) bool { identifies, resumes = v.Identifies(), v.Resumes(); return true })

	proxy.Cut()
	if !fake.Wait(wait, func(v discordtest.View) bool { return v.Sockets() == 0 }) {
		t.Fatal("the replica cut off from etcd kept the gateway")
	}
	during := map[string]bool{}
	for i := range 3 {
		text := fmt.Sprintf("during %d", i)
		during[text] = true
		post(text) // no replica holds the gateway: Discord keeps it for a RESUME
	}
	clustertest.WaitLeading(t, rb, "discord", wait)
	got := map[string]bool{}
	for range 3 {
		got[recB.next(t).Text] = true
	}
	if !maps.Equal(got, during) {
		t.Fatalf("the new leader got %v, want %v", got, during)
	}
	if !fake.Wait(wait, func(v discordtest.View) bool {
		return v.Connected() && v.Resumes() == resumes+1 && v.Identifies() == identifies
	}) {
		t.Fatal("the new leader did not RESUME the session")
	}
	post("after")
	if m := recB.next(t); m.Text != "after" {
		t.Fatalf("the new leader got %q", m.Text)
	}
	select {
	case m := <-recA:
		t.Fatalf("the cut-off replica got %q", m.Text)
	default:
	}
	if raw, _ := state.Load(sessionKey); raw == nil {
		t.Fatal("no gateway session in the store")
	}
}

// A new leader hands on what a replica gone from the cluster left in its
// journal (killed while an attachment was downloading), and empties it.
func TestANewLeaderHandsOnAGoneReplicasJournal(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	gone := clustertest.Join(t, etcd.Endpoints[0], "a", 2*time.Second)
	if err := gone.Close(); err != nil {
		t.Fatal(err)
	}
	fake := newFake(t, discordtest.Options{})
	bot := fake.Options().BotUserID
	left, _ := json.Marshal(discordgo.Message{ID: "1180000000000000001", ChannelID: "c1", GuildID: "g1",
		Author: &discordgo.User{ID: "u1", Username: "u1"}, Content: "<@" + bot + "> left behind", Mentions: []*discordgo.User{{ID: bot}}})
	journal, _ := json.Marshal([]json.RawMessage{left})
	state := &statetest.State{}
	if err := state.Save("discord.pending/a", journal); err != nil {
		t.Fatal(err)
	}

	rb := clustertest.Join(t, etcd.Endpoints[0], "b", 2*time.Second)
	rec := make(recorder, 4)
	b := newAdapter(t, fake, Options{State: state, JournalKey: "discord.pending/b", Replica: rb,
		JournalOf: func(name string) string { return "discord.pending/" + name }})
	startAdapterWith(t, fake, b, rec)
	if m := rec.next(t); m.Text != "left behind" {
		t.Fatalf("the new leader handed on %q", m.Text)
	}
	// The journal is emptied once its events are handed on, after the
	// handler has the message (see journal.Adopt): it may lag it a little.
	deadline := time.Now().Add(10 * time.Second)
	for {
		raw, _ := state.Load("discord.pending/a")
		if raw == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gone replica's journal still holds %s", raw)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
