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
)

func prefix(method, p string) func(string, string) bool {
	return func(m, path string) bool { return m == method && strings.HasPrefix(path, p) }
}

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

	fake.Script429(prefix("PATCH", "/channels/c1/messages/"), 1, 300*time.Millisecond, false)
	fake.Script429(prefix("PATCH", "/channels/c1/messages/"), 1, 200*time.Millisecond, true)
	fake.ScriptStatus(prefix("PATCH", "/channels/c1/messages/"), 2, http.StatusBadGateway)
	if err := a.Edit(ctx, ref, "second"); err != nil {
		t.Fatalf("Edit after 429s and 502s: %v", err)
	}
	var edits []discordtest.Call
	for _, c := range fake.Calls() {
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

	fake.ScriptStatus(prefix("PATCH", "/channels/c1/messages/"), 1, http.StatusForbidden)
	if err := a.Edit(ctx, ref, "third"); err == nil {
		t.Error("Edit answered 403 returned no error")
	}
	if n := fake.CallCount("PATCH", "/channels/c1/messages/"); n != 6 {
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
