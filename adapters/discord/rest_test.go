package discord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/golem-chat/golem/adapters/discord/discordtest"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/retry"
)

// TestRetries: a 429 is retried after its retry_after (per route or
// global), a 5xx with backoff, a 4xx not at all.
func TestRetries(t *testing.T) {
	fake := newFake(t, discordtest.Options{})
	a := startAdapter(t, fake, Options{}, make(recorder, 8))
	ctx := context.Background()
	ref, err := a.Send(ctx, core.Place{Channel: "c1"}, "first")
	if err != nil {
		t.Fatal(err)
	}

	const route = "PATCH /channels/c1/messages/"
	fake.Fail(route, 1, discordtest.Failure{Status: http.StatusTooManyRequests, RetryAfter: 300 * time.Millisecond})
	fake.Fail(route, 1, discordtest.Failure{Status: http.StatusTooManyRequests, RetryAfter: 200 * time.Millisecond, Global: true})
	fake.Fail(route, 2, discordtest.Failure{Status: http.StatusBadGateway})
	if err := a.Edit(ctx, ref, "second"); err != nil {
		t.Fatalf("Edit after 429s and 502s: %v", err)
	}
	var edits []discordtest.Call
	for _, c := range fake.Calls("") {
		if c.Method == "PATCH" {
			edits = append(edits, c)
		}
	}
	if len(edits) != 5 {
		t.Fatalf("%d edit attempts, want 5 (two 429s, two 502s, success)", len(edits))
	}
	for i, min := range []time.Duration{300 * time.Millisecond, 200 * time.Millisecond} {
		if gap := edits[i+1].At.Sub(edits[i].At); gap < min {
			t.Errorf("retry %d came %v after a 429 asking for %v", i+1, gap, min)
		}
	}
	if m, _ := fake.Message(ref.ID); m.Content != "second" {
		t.Errorf("content = %q", m.Content)
	}

	fake.Fail("PATCH /channels/c1/messages/", 1, discordtest.Failure{Status: http.StatusForbidden})
	if err := a.Edit(ctx, ref, "third"); err == nil {
		t.Error("Edit answered 403 returned no error")
	}
	if n := len(fake.Calls("PATCH /channels/c1/messages/")); n != 6 {
		t.Errorf("a 403 was retried: %d edit calls, want 6", n)
	}
}

// TestChannelBudget: many writers in one channel stay within the server's
// per-channel limit by the adapter's budget alone (the fake sends no
// X-RateLimit headers here); with the budget set too high, the server's
// 429s are honoured and every message still lands.
func TestChannelBudget(t *testing.T) {
	for _, tt := range []struct {
		name     string
		limit    int
		want429s bool
	}{
		{"budget matches the server", 5, false},
		{"budget too high: 429s honoured", 50, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake(t, discordtest.Options{ChannelLimit: 5, ChannelWindow: 500 * time.Millisecond, NoRateLimitHeaders: true})
			a := startAdapter(t, fake, Options{ChannelLimit: tt.limit, ChannelWindow: 500 * time.Millisecond}, make(recorder, 8))
			ctx := context.Background()
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for w := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ref, err := a.Send(ctx, core.Place{Channel: "c1"}, fmt.Sprintf("writer %d", w))
					if err != nil {
						errs <- err
						return
					}
					for i := range 3 {
						if err := a.Edit(ctx, ref, fmt.Sprintf("writer %d edit %d", w, i)); err != nil {
							errs <- err
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			msgs := fake.Messages("c1")
			if len(msgs) != 3 {
				t.Fatalf("%d messages, want 3", len(msgs))
			}
			for _, m := range msgs {
				if !strings.HasSuffix(m.Content, "edit 2") {
					t.Errorf("final content %q", m.Content)
				}
			}
			if got := fake.RateLimited() > 0; got != tt.want429s {
				t.Errorf("429s = %d, want some: %v", fake.RateLimited(), tt.want429s)
			}
		})
	}
}

func TestRedactHidesTokens(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"https://discord.com/api/v9/webhooks/100/secret-token/messages/@original", "https://discord.com/api/v9/webhooks/100/REDACTED/messages/@original"},
		{"https://discord.com/api/v9/webhooks/100/secret-token?wait=true", "https://discord.com/api/v9/webhooks/100/REDACTED"},
		{"https://discord.com/api/v9/interactions/5/secret-token/callback", "https://discord.com/api/v9/interactions/5/REDACTED/callback"},
		{"https://discord.com/api/v9/channels/1/messages", "https://discord.com/api/v9/channels/1/messages"},
	} {
		err := redact(fmt.Errorf("post: %w", &url.Error{Op: "Post", URL: tt.in, Err: io.ErrUnexpectedEOF}))
		if strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("redact(%s) = %v, want %s", tt.in, err, tt.want)
		}
		// A 429 that arrives as the context ends is returned through redact too.
		rl := &discordgo.RateLimitError{RateLimit: &discordgo.RateLimit{TooManyRequests: &discordgo.TooManyRequests{RetryAfter: time.Second}, URL: tt.in}}
		err = redact(fmt.Errorf("edit: %w", rl))
		if strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("redact(429 on %s) = %v, want %s", tt.in, err, tt.want)
		}
	}
}

// TestNoDoublePost: a channel message whose create failed late (a 5xx, an
// answer that never came) but was made all the same is not made twice: the
// repeat carries the same nonce with enforce_nonce, and Discord answers it
// with the message already there. A follow-up, which takes no nonce, is
// not repeated once it may have landed.
func TestNoDoublePost(t *testing.T) {
	fake := newFake(t, discordtest.Options{})
	rec := make(recorder, 8)
	a := startAdapter(t, fake, Options{ChannelLimit: 50, ChannelWindow: time.Second}, rec)
	a.retry.AttemptTimeout = 300 * time.Millisecond
	a.retry.FirstBackoff = 10 * time.Millisecond
	ctx := context.Background()
	const create = "POST /channels/c1/messages$"
	for _, tt := range []struct {
		name   string
		script func()
	}{
		{"500, landed", func() {
			fake.Fail(create, 1, discordtest.Failure{Status: http.StatusInternalServerError, Landed: true})
		}},
		{"hang, landed", func() { fake.Fail(create, 1, discordtest.Failure{Hang: true, Landed: true}) }},
		{"502, not landed", func() { fake.Fail(create, 1, discordtest.Failure{Status: http.StatusBadGateway}) }},
		{"hang, not landed", func() { fake.Fail(create, 1, discordtest.Failure{Hang: true}) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before, calls := len(fake.Messages("c1")), len(fake.Calls(create))
			tt.script()
			ref, err := a.Send(ctx, core.Place{Channel: "c1"}, tt.name)
			if err != nil {
				t.Fatal(err)
			}
			msgs := fake.Messages("c1")
			if len(msgs) != before+1 {
				t.Fatalf("%d new messages, want 1: %+v", len(msgs)-before, msgs[before:])
			}
			if m := msgs[len(msgs)-1]; m.ID != ref.ID || m.Content != tt.name {
				t.Errorf("Send returned %+v for the message %+v", ref, m)
			}
			creates := fake.Calls(create)[calls:]
			if len(creates) != 2 {
				t.Fatalf("%d create requests, want 2", len(creates))
			}
			n0, n1 := creates[0].Body["nonce"], creates[1].Body["nonce"]
			if n0 == nil || n0 != n1 || creates[0].Body["enforce_nonce"] != true || creates[1].Body["enforce_nonce"] != true {
				t.Errorf("the repeat's nonce %v, enforce_nonce %v; the first's %v, %v",
					n1, creates[1].Body["enforce_nonce"], n0, creates[0].Body["enforce_nonce"])
			}
		})
	}

	// Another message gets another nonce, so the same text posts again.
	if _, err := a.Send(ctx, core.Place{Channel: "c1"}, "500, landed"); err != nil {
		t.Fatal(err)
	}
	if n := len(fake.Messages("c1")); n != 5 {
		t.Errorf("%d messages, want 5", n)
	}

	id := fake.Command(discordtest.Slash{Channel: "c2", Guild: "g1", User: "u1", Name: "ask",
		Options: []discordtest.Option{{Name: "prompt", Value: "hi"}}})
	rec.next(t)
	if !fake.Wait(wait, func(v discordtest.View) bool { in, _ := v.Interaction(id); return in.Callback == 5 }) {
		t.Fatal("the interaction was not deferred")
	}
	if _, err := a.Send(ctx, core.Place{Channel: "c2", ReplyTo: id}, "the answer"); err != nil {
		t.Fatal(err)
	}
	hooks := len(fake.Calls("POST /webhooks/"))
	fake.Fail("POST /webhooks/", 1, discordtest.Failure{Status: http.StatusInternalServerError, Landed: true})
	_, err := a.Send(ctx, core.Place{Channel: "c2", ReplyTo: id}, "a follow-up")
	if !errors.Is(err, retry.ErrMayHaveLanded) {
		t.Errorf("a follow-up that may have landed: %v", err)
	}
	if n := len(fake.Calls("POST /webhooks/")) - hooks; n != 1 {
		t.Errorf("the follow-up was sent %d times", n)
	}
	var texts []string
	for _, m := range fake.Messages("c2") {
		texts = append(texts, m.Content)
	}
	if strings.Join(texts, "|") != "the answer|a follow-up" {
		t.Errorf("messages in c2: %q", texts)
	}
}

// TestDeferralThatLanded: a deferral answered 500 although Discord took it
// is repeated, hears "already acknowledged", and counts as deferred: the
// answer fills the interaction's response rather than a channel message.
func TestDeferralThatLanded(t *testing.T) {
	fake := newFake(t, discordtest.Options{})
	rec := make(recorder, 8)
	a := startAdapter(t, fake, Options{}, rec)
	a.retry.FirstBackoff = 10 * time.Millisecond
	fake.Fail("POST /interactions/", 1, discordtest.Failure{Status: http.StatusInternalServerError, Landed: true})
	id := fake.Command(discordtest.Slash{Channel: "c3", Guild: "g1", User: "u1", Name: "ask",
		Options: []discordtest.Option{{Name: "prompt", Value: "hi"}}})
	rec.next(t)
	if !fake.Wait(wait, func(v discordtest.View) bool { return len(v.Calls("POST /interactions/")) == 2 }) {
		t.Fatal("the deferral was not repeated")
	}
	if _, err := a.Send(context.Background(), core.Place{Channel: "c3", ReplyTo: id}, "the answer"); err != nil {
		t.Fatal(err)
	}
	msgs := fake.Messages("c3")
	if len(msgs) != 1 || !msgs[0].Original || msgs[0].Interaction != id || msgs[0].Content != "the answer" {
		t.Errorf("messages in c3: %+v, want the answer as the interaction's response", msgs)
	}
}
