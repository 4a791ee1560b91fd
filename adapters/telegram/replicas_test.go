package telegram

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/telegram/telegramtest"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/clustertest"
	"github.com/golem-chat/golem/internal/etcdtest"
	"github.com/golem-chat/golem/internal/nettest"
	"github.com/golem-chat/golem/store/etcdstore"
)

// polls is an http.RoundTripper that records when each getUpdates of one
// adapter was under way.
type polls struct {
	mu    sync.Mutex
	spans [][2]time.Time // start, end; end zero while under way
	t     http.RoundTripper
}

func newPolls() *polls { return &polls{t: &http.Transport{}} }

func (p *polls) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(r.URL.Path, "/getUpdates") {
		return p.t.RoundTrip(r)
	}
	p.mu.Lock()
	i := len(p.spans)
	p.spans = append(p.spans, [2]time.Time{time.Now()})
	p.mu.Unlock()
	resp, err := p.t.RoundTrip(r)
	p.mu.Lock()
	p.spans[i][1] = time.Now()
	p.mu.Unlock()
	return resp, err
}

// span is when the first getUpdates began and the last ended (zero when
// one is still under way), and how many there were.
func (p *polls) span() (first, last time.Time, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, s := range p.spans {
		if i == 0 {
			first = s[0]
		}
		if s[1].IsZero() {
			last = time.Time{}
			return first, last, len(p.spans)
		}
		if s[1].After(last) {
			last = s[1]
		}
	}
	return first, last, len(p.spans)
}

// handed is one message a replica's adapter handed to its handler.
type handed struct {
	replica string
	event   string
	at      time.Time
}

// Two replicas share one etcd store and one bot: only the leader polls,
// every update reaches a handler once, either replica sends; when the
// leader is cut off from etcd it stops polling before the other starts,
// which takes over within replica_ttl + 5 s, losing and repeating nothing.
func TestReplicasPollOneAtATime(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	proxy := nettest.NewProxy(t, etcd.Endpoints[0])
	st, err := etcdstore.Open(etcdstore.Config{Endpoints: etcd.Endpoints, Prefix: "golem"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	const ttl = 2 * time.Second
	ra := clustertest.Join(t, proxy.Addr, "a", ttl)
	rb := clustertest.Join(t, etcd.Endpoints[0], "b", ttl)
	s := telegramtest.New(t, telegramtest.Options{})

	var mu sync.Mutex
	var got []handed
	run := func(name string, opts Options) (*Adapter, *polls) {
		p := newPolls()
		opts.State, opts.HTTPClient, opts.PollTimeout = st, &http.Client{Transport: p}, 5*time.Second
		a, r, _ := start(t, s, opts)
		go func() {
			for m := range r.ch {
				mu.Lock()
				got = append(got, handed{replica: name, event: m.EventID, at: time.Now()})
				mu.Unlock()
			}
		}()
		return a, p
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
	waitCount := func(n int, d time.Duration) {
		t.Helper()
		deadline := time.Now().Add(d)
		for count() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d messages handed on after %v, want %d", count(), d, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	a, pa := run("a", Options{Replica: ra})
	clustertest.WaitLeading(t, ra, "telegram", 10*time.Second)
	b, pb := run("b", Options{Replica: rb})
	var want []string
	for i := range 5 {
		want = append(want, fmt.Sprint("telegram:", s.PushPrivate(ann, fmt.Sprint("before ", i)).UpdateID))
	}
	waitCount(5, 10*time.Second)
	if _, _, n := pb.span(); n != 0 || rb.Leading("telegram") {
		t.Fatalf("b, not leading, made %d getUpdates", n)
	}
	// The replica that does not poll sends all the same.
	if _, err := b.Send(context.Background(), core.Place{Channel: "42"}, "from b"); err != nil {
		t.Fatalf("b, not leading, could not send: %v", err)
	}

	cut := time.Now()
	proxy.Cut()
	pushed := make(chan struct{})
	push := func(what string) {
		want = append(want, fmt.Sprint("telegram:", s.PushPrivate(ann, what).UpdateID))
	}
	go func() { // updates keep coming through the takeover
		defer close(pushed)
		for i := range 6 { // to a, which leads until its grace ends
			push(fmt.Sprint("cut ", i))
			time.Sleep(200 * time.Millisecond)
		}
		// None comes while a stops: a poll it left under way would wait
		// on, and meet b's.
		for ra.Leading("telegram") {
			time.Sleep(10 * time.Millisecond)
		}
		push("between")
		for !rb.Leading("telegram") {
			time.Sleep(10 * time.Millisecond)
		}
		for i := range 10 {
			push(fmt.Sprint("after ", i))
			time.Sleep(100 * time.Millisecond)
		}
	}()
	<-pushed
	waitCount(len(want), ttl+10*time.Second)
	// a, cut off from etcd but not from Telegram, still sends.
	if _, err := a.Send(context.Background(), core.Place{Channel: "42"}, "from a"); err != nil {
		t.Fatalf("a, cut off from etcd, could not send: %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	times := map[string]int{}
	var bFirst time.Time
	for i, h := range got {
		times[h.event]++
		if i < 5 && h.replica != "a" {
			t.Errorf("update %s before the cut was handed on by %s, not the leader", h.event, h.replica)
		}
		if h.replica == "b" && bFirst.IsZero() {
			bFirst = h.at
		}
	}
	for _, e := range want {
		if times[e] != 1 {
			t.Errorf("update %s handed on %d times, want once", e, times[e])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d messages handed on, %d pushed", len(got), len(want))
	}
	if bFirst.IsZero() || bFirst.Sub(cut) > ttl+5*time.Second {
		t.Errorf("b took over %v after the cut, want within %v", bFirst.Sub(cut), ttl+5*time.Second)
	}
	_, aLast, _ := pa.span()
	bStart, _, _ := pb.span()
	if aLast.IsZero() || !aLast.Before(bStart) {
		t.Errorf("a's polls ended at %v after the cut (zero: one still under way), b's began at %v: they overlap",
			aLast.Sub(cut), bStart.Sub(cut))
	}
	if n := s.Conflicts(); n > 2 {
		t.Errorf("%d getUpdates answered 409 Conflict around the takeover, want at most 2", n)
	}
	t.Logf("a stopped polling %v after the cut, b polled %v after it and handed its first message on %v after it; %d conflicts",
		aLast.Sub(cut), bStart.Sub(cut), bFirst.Sub(cut), s.Conflicts())
}

// A 409 Conflict (another poller of the same bot took this one's place) is
// backed off from and logged once, however many follow, and polling goes
// on once the other poller stops.
func TestConflictIsBackedOffAndLoggedOnce(t *testing.T) {
	s := telegramtest.New(t, telegramtest.Options{})
	var logs syncBuffer
	lg := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	p := newPolls()
	_, r, _ := start(t, s, Options{Logger: lg, HTTPClient: &http.Client{Transport: p}, PollTimeout: 5 * time.Second})
	s.WaitUntil(t, 5*time.Second, "the adapter polls", func() bool { return len(s.Calls("getUpdates")) > 0 })

	// Another program polls with the bot's token for 7 s, each of its
	// polls taking the adapter's place, and the adapter's taking its.
	ctx, cancel := context.WithTimeout(context.Background(), 7*time.Second)
	defer cancel()
	var other atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(ctx, "POST", s.URL+"/bot"+s.Token()+"/getUpdates",
				strings.NewReader(url.Values{"timeout": {"5"}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			other.Add(1)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}()
	<-done
	_, _, during := p.span()
	if s.Conflicts() < 2 {
		t.Fatalf("only %d conflicts in 7 s of two pollers", s.Conflicts())
	}
	// Backing off from 0.5 s, doubling: no tight loop.
	if during > 10 {
		t.Errorf("the adapter polled %d times in 7 s of conflicts", during)
	}

	pushed := s.PushPrivate(ann, "after")
	if m := r.next(t); m.EventID != fmt.Sprint("telegram:", pushed.UpdateID) {
		t.Fatalf("got %s after the conflicts, want update %d", m.EventID, pushed.UpdateID)
	}
	if !strings.Contains(logs.String(), "polling again after 409 Conflicts") { // logged before the update is taken
		t.Errorf("the end of the conflicts was not logged:\n%s", logs.String())
	}
	if n := strings.Count(logs.String(), "409 Conflict); backing off"); n != 1 {
		t.Errorf("the conflict was logged %d times, want once:\n%s", n, logs.String())
	}
	t.Logf("%d conflicts; the adapter polled %d times, the other %d", s.Conflicts(), during, other.Load())
}
