package retry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// statusError is what the test's attempt returns for a non-200 answer.
type statusError struct{ code int }

func (e statusError) Error() string { return fmt.Sprintf("HTTP %d", e.code) }

// classify reads the test server's answers: 429 asks to wait 50ms, 5xx
// and network failures are transient, anything else final.
func classify(err error) Verdict {
	var se statusError
	switch {
	case errors.As(err, &se) && se.code == http.StatusTooManyRequests:
		return Limited(50 * time.Millisecond)
	case errors.As(err, &se) && se.code >= 500:
		return Failed(fmt.Sprintf("http_%d", se.code))
	case errors.As(err, &se):
		return Refused
	}
	return Failed("network")
}

// server answers each request with the next scripted status (200 once
// the script is done); a status of -1 holds the request until the client
// gives up.
type server struct {
	*httptest.Server
	mu     sync.Mutex
	script []int
	hits   int
}

func newServer(t *testing.T, script ...int) *server {
	s := &server{script: script}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // the server notices a client gone only once the body is read
		s.mu.Lock()
		s.hits++
		code := http.StatusOK
		if len(s.script) > 0 {
			code, s.script = s.script[0], s.script[1:]
		}
		s.mu.Unlock()
		if code == -1 {
			<-r.Context().Done()
			return
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits
}

// post is an attempt that POSTs to url under the attempt's context.
func post(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("text=hi"))
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return statusError{resp.StatusCode}
		}
		return nil
	}
}

func policy(log *slog.Logger) *Policy {
	return &Policy{Log: log, Classify: classify, FirstBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond,
		AttemptTimeout: 5 * time.Second}
}

func TestRetriesWithTheBudgetTakenEachTime(t *testing.T) {
	s := newServer(t, 429, 503, 502, 200)
	var before, after int
	c := Call{Method: "edit", Idempotent: true, Before: func(context.Context) (func(), error) {
		before++
		return func() { after++ }, nil
	}}
	if err := policy(nil).Do(context.Background(), c, post(s.URL)); err != nil {
		t.Fatal(err)
	}
	if s.count() != 4 || before != 4 || after != 4 {
		t.Errorf("%d requests, Before ran %d times, its func %d; want 4 each", s.count(), before, after)
	}
}

func TestRateLimitWaitIsHonoured(t *testing.T) {
	s := newServer(t, 429)
	var told time.Duration
	start := time.Now()
	err := policy(nil).Do(context.Background(), Call{Method: "edit", Idempotent: true,
		RateLimited: func(d time.Duration) { told = d }}, post(s.URL))
	if err != nil {
		t.Fatal(err)
	}
	if told < 50*time.Millisecond || time.Since(start) < 50*time.Millisecond {
		t.Errorf("retried after %v, told %v; the 429 asked for 50ms", time.Since(start), told)
	}
}

func TestFinalIsNotRepeated(t *testing.T) {
	s := newServer(t, 403)
	err := policy(nil).Do(context.Background(), Call{Method: "edit", Idempotent: true}, post(s.URL))
	var se statusError
	if !errors.As(err, &se) || se.code != 403 || !strings.HasPrefix(err.Error(), "edit: ") || s.count() != 1 {
		t.Errorf("err %v after %d requests, want the 403 after 1", err, s.count())
	}
}

func TestBounds(t *testing.T) {
	fails := func(n, code int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = code
		}
		return out
	}
	for _, tt := range []struct {
		name   string
		script []int
		p      func(*Policy)
		hits   int
	}{
		{"transient failures", fails(10, 500), func(p *Policy) { p.MaxFailures = 3 }, 3},
		{"attempts in all", fails(10, 429), func(p *Policy) { p.MaxAttempts = 2 }, 2},
		{"total time", fails(10, 429), func(p *Policy) { p.MaxTotal = 10 * time.Millisecond }, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.script...)
			p := policy(nil)
			tt.p(p)
			if err := p.Do(context.Background(), Call{Method: "edit", Idempotent: true}, post(s.URL)); err == nil || !strings.Contains(err.Error(), "giving up") {
				t.Errorf("err = %v", err)
			}
			if s.count() != tt.hits {
				t.Errorf("%d requests, want %d", s.count(), tt.hits)
			}
		})
	}
}

// TestMayHaveLanded: a post answered 5xx, or whose attempt stalled after
// the request went out, is repeated only when Landed says it did not land,
// and not at all without Landed.
func TestMayHaveLanded(t *testing.T) {
	for _, status := range []int{500, -1} {
		t.Run(fmt.Sprint("status ", status), func(t *testing.T) {
			p := policy(nil)
			p.AttemptTimeout = 100 * time.Millisecond

			s := newServer(t, status)
			err := p.Do(context.Background(), Call{Method: "post"}, post(s.URL))
			if !errors.Is(err, ErrMayHaveLanded) || s.count() != 1 {
				t.Errorf("without Landed: err %v after %d requests", err, s.count())
			}

			s = newServer(t, status)
			var since []time.Time
			landed := func(found bool) func(context.Context, time.Time) (bool, error) {
				return func(_ context.Context, t time.Time) (bool, error) { since = append(since, t); return found, nil }
			}
			start := time.Now()
			if err := p.Do(context.Background(), Call{Method: "post", Landed: landed(false)}, post(s.URL)); err != nil || s.count() != 2 {
				t.Errorf("not landed: err %v after %d requests, want a retry", err, s.count())
			}
			if len(since) != 1 || since[0].Before(start) {
				t.Errorf("Landed asked about %v, the call began %v", since, start)
			}

			s = newServer(t, status)
			if err := p.Do(context.Background(), Call{Method: "post", Landed: landed(true)}, post(s.URL)); err != nil || s.count() != 1 {
				t.Errorf("landed: err %v after %d requests, want success without a retry", err, s.count())
			}

			s = newServer(t, status)
			if err := p.Do(context.Background(), Call{Method: "post", RiskDuplicate: true}, post(s.URL)); err != nil || s.count() != 2 {
				t.Errorf("risking a duplicate: err %v after %d requests, want a retry", err, s.count())
			}

			s = newServer(t, status)
			check := func(context.Context, time.Time) (bool, error) { return false, errors.New("history unreadable") }
			if err := p.Do(context.Background(), Call{Method: "post", Landed: check}, post(s.URL)); !errors.Is(err, ErrMayHaveLanded) || s.count() != 1 {
				t.Errorf("check failed: err %v after %d requests", err, s.count())
			}
		})
	}
}

// TestUnsentIsRepeated: a request that never reached the server (the
// connection was refused) is repeated even when it is not idempotent.
func TestUnsentIsRepeated(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	tries := 0
	err = policy(nil).Do(context.Background(), Call{Method: "post"}, func(ctx context.Context) error {
		tries++
		return post(url)(ctx)
	})
	if errors.Is(err, ErrMayHaveLanded) || tries != 5 {
		t.Errorf("err %v after %d tries, want 5 tries (the default MaxFailures)", err, tries)
	}
}

func TestStalledAttemptIsRetried(t *testing.T) {
	s := newServer(t, -1)
	var log bytes.Buffer
	p := policy(slog.New(slog.NewJSONHandler(&log, nil)))
	p.AttemptTimeout = 100 * time.Millisecond
	if err := p.Do(context.Background(), Call{Method: "edit", Idempotent: true}, post(s.URL)); err != nil {
		t.Fatal(err)
	}
	if s.count() != 2 {
		t.Errorf("%d requests, want 2", s.count())
	}
	if !strings.Contains(log.String(), `"reason":"timeout"`) {
		t.Errorf("a stalled attempt logged %s", log.String())
	}

	// A call's own bound takes the policy's place.
	s = newServer(t, -1)
	p.AttemptTimeout = time.Hour
	err := p.Do(context.Background(), Call{Method: "download", Idempotent: true, AttemptTimeout: 100 * time.Millisecond}, post(s.URL))
	if err != nil || s.count() != 2 {
		t.Errorf("with the call's bound: err %v after %d requests, want 2", err, s.count())
	}
}

func TestCancelEndsTheWait(t *testing.T) {
	s := newServer(t, 429)
	p := policy(nil)
	p.Classify = func(error) Verdict { return Limited(time.Hour) }
	p.MaxTotal = 2 * time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	c := Call{Method: "edit", Idempotent: true, RateLimited: func(time.Duration) { cancel() }}
	if err := p.Do(ctx, c, post(s.URL)); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
	if err := Wait(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait on an ended context: %v", err)
	}
}

// TestLogKeys: every retry is logged with the same keys.
func TestLogKeys(t *testing.T) {
	var buf bytes.Buffer
	s := newServer(t, 429, 503)
	if err := policy(slog.New(slog.NewJSONHandler(&buf, nil))).Do(context.Background(), Call{Method: "chat.update", Idempotent: true}, post(s.URL)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("log:\n%s", buf.String())
	}
	for i, reason := range []string{"rate_limited", "http_503"} {
		var rec map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &rec); err != nil {
			t.Fatal(err)
		}
		if rec["method"] != "chat.update" || rec["attempt"] != float64(i+1) || rec["reason"] != reason || rec["retry_in_ms"] == nil || rec["err"] == nil {
			t.Errorf("log line %d: %s", i, lines[i])
		}
	}
}

// BenchmarkDo is the policy's cost around an attempt that succeeds at once
// (its context, its trace, the budget hook), without any request.
func BenchmarkDo(b *testing.B) {
	p := policy(nil)
	c := Call{Method: "edit", Idempotent: true, Before: func(context.Context) (func(), error) { return nil, nil }}
	ctx := context.Background()
	for b.Loop() {
		if err := p.Do(ctx, c, func(context.Context) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBackoffDoublesUpToMaxAndLogsEachRetry(t *testing.T) {
	var buf strings.Builder
	b := Backoff{First: time.Millisecond, Max: 4 * time.Millisecond, Method: "getUpdates",
		Log: slog.New(slog.NewTextHandler(&buf, nil))}
	for range 4 {
		if err := b.Wait(context.Background(), "polling failed", "http_502", errors.New("bad gateway")); err != nil {
			t.Fatal(err)
		}
	}
	if b.Attempts() != 4 {
		t.Errorf("Attempts = %d, want 4", b.Attempts())
	}
	for _, want := range []string{"retry_in_ms=1 ", "retry_in_ms=2 ", "retry_in_ms=4 ", "attempt=4 ", "method=getUpdates", "reason=http_502", `err="bad gateway"`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log %q lacks %q", buf.String(), want)
		}
	}
	if strings.Count(buf.String(), "retry_in_ms=4 ") != 2 {
		t.Errorf("the backoff passed its max: %q", buf.String())
	}
	b.Reset()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Wait(ctx, "x", "y", nil); !errors.Is(err, context.Canceled) || b.Attempts() != 1 {
		t.Errorf("Wait after the context ended = %v (attempts %d)", err, b.Attempts())
	}
}
