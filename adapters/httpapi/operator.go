package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/store"
	"github.com/golem-chat/golem/worktree"
)

// Operator is what the operator's view asks of core about the
// conversations it holds and does to them (core.Dispatcher implements it).
type Operator interface {
	LiveStates() (map[store.Key]core.Live, error)
	SettingsOf(conv store.Conversation) core.Settings
	ChannelName(key store.Key) string
	PendingApprovals(key store.Key) []core.Pending
	Worktree(ctx context.Context, key store.Key) (w worktree.Workspace, dirty, found bool, err error)
	// StopConversation and NewSession act on the replica that owns key
	// (forwarded there when it is another).
	StopConversation(ctx context.Context, key store.Key) (string, error)
	NewSession(ctx context.Context, key store.Key) (string, error)
	Diff(key store.Key) (string, error)
	// Decide decides key's request id as the operator, on the replica
	// whose turn waits for it.
	Decide(ctx context.Context, key store.Key, id, decision string, option int) core.ActionResult
	Watch(key store.Key, sink func(...parser.Event)) (stop func(), ok bool)
}

var _ Operator = (*core.Dispatcher)(nil)

// The bounds of the conversations' listing.
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
	// MaxKeyLen bounds a conversation key in a path, in bytes.
	MaxKeyLen = 512
)

// conversationJSON is one conversation as GET /v1/conversations lists it.
type conversationJSON struct {
	Key          string        `json:"key"`
	Platform     string        `json:"platform"`
	Workspace    string        `json:"workspace"`
	Channel      string        `json:"channel"`
	ChannelName  *string       `json:"channel_name"` // null: the platform gave none
	Engine       string        `json:"engine"`
	Model        string        `json:"model"`
	Permissions  string        `json:"permissions"`
	Isolation    isolationJSON `json:"isolation"`
	State        string        `json:"state"`  // idle, running, waiting, queued
	Queued       int           `json:"queued"` // messages waiting behind the running turn
	Started      *time.Time    `json:"started"`
	Replica      string        `json:"replica"`
	LastActivity time.Time     `json:"last_activity"`
	Month        usageJSON     `json:"month"`
}

type isolationJSON struct {
	Mode   string `json:"mode"` // shared | worktree
	Branch string `json:"branch,omitempty"`
	// Dirty is null in the listing (it takes git to know) and where the
	// conversation has no worktree yet.
	Dirty *bool `json:"dirty"`
}

type usageJSON struct {
	Turns   int     `json:"turns"`
	Tokens  int64   `json:"tokens"`
	CostUSD float64 `json:"cost_usd"`
}

func usageOf(u store.Usage) usageJSON {
	return usageJSON{Turns: u.Turns, Tokens: u.Tokens(), CostUSD: u.CostUSD}
}

// listed is a conversation on its way into the listing.
type listed struct {
	conv store.Conversation
	live core.Live
	at   time.Time // last activity
	key  string    // conv.Key's String, made once
}

// conversations answers GET /v1/conversations: every conversation the
// store knows and those running that it does not yet, newest activity
// first, filtered by ?state= and ?platform=, paged by ?limit= and ?after=.
func (s *Server) conversations(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad query: "+err.Error())
		return
	}
	limit := DefaultPageSize
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			writeError(w, http.StatusBadRequest, "limit must be a number from 1 to "+strconv.Itoa(MaxPageSize))
			return
		}
		limit = n
	}
	state := q.Get("state")
	switch state {
	case "", "idle", "running", "waiting", "queued":
	default:
		writeError(w, http.StatusBadRequest, "state must be idle, running, waiting or queued")
		return
	}
	platform := q.Get("platform")
	var after *cursor
	if v := q.Get("after"); v != "" {
		c, err := parseCursor(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "after is not a cursor this server gave")
			return
		}
		after = &c
	}
	all, err := s.listAll()
	if err != nil {
		s.log.Error("http: list conversations", "err", err)
		writeError(w, http.StatusServiceUnavailable, "the store cannot be read now: "+err.Error())
		return
	}
	page := make([]listed, 0, limit)
	more := false
	for _, l := range all {
		if platform != "" && l.conv.Key.Platform != platform || state != "" && l.live.State != state {
			continue
		}
		if after != nil && !after.before(l) {
			continue
		}
		if len(page) == limit {
			more = true
			break
		}
		page = append(page, l)
	}
	now := time.Now()
	out := struct {
		Conversations []conversationJSON `json:"conversations"`
		Next          *string            `json:"next"`
	}{Conversations: make([]conversationJSON, 0, len(page))}
	described, err := s.describeAll(page, now)
	if err != nil {
		s.log.Error("http: read the listed conversations", "err", err)
		writeError(w, http.StatusServiceUnavailable, "the store cannot be read now: "+err.Error())
		return
	}
	out.Conversations = append(out.Conversations, described...)
	if more {
		next := cursorOf(page[len(page)-1]).String()
		out.Next = &next
	}
	writeJSON(w, out)
}

// listAll is every conversation in the listing's order: last activity,
// newest first, then by key.
func (s *Server) listAll() ([]listed, error) {
	convs, err := s.opts.Store.ListConversations()
	if err != nil {
		return nil, err
	}
	live, err := s.opts.Operator.LiveStates()
	if err != nil {
		return nil, err
	}
	all := make([]listed, 0, len(convs)+len(live))
	for _, c := range convs {
		l := listed{conv: store.Conversation{Key: c.Key, LastUsed: c.LastUsed}, live: live[c.Key], at: c.LastUsed, key: c.Key.String()}
		delete(live, c.Key)
		all = append(all, l)
	}
	for k, l := range live { // its first turn runs: nothing stored yet
		all = append(all, listed{conv: store.Conversation{Key: k}, live: l, key: k.String()})
	}
	for i := range all {
		l := &all[i]
		if l.live.State == "" {
			l.live.State = "idle"
		}
		if l.live.Started.After(l.at) {
			l.at = l.live.Started
		}
	}
	sortListed(all)
	return all, nil
}

// describeReads bounds the conversations a page reads at once: with etcd
// each is two round trips, which a page of 50 should not wait for one
// after another.
const describeReads = 8

// describeAll describes the page's conversations, a few at once, in order.
func (s *Server) describeAll(page []listed, now time.Time) ([]conversationJSON, error) {
	out := make([]conversationJSON, len(page))
	errs := make([]error, len(page))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(describeReads, len(page)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], errs[i] = s.describe(page[i], now)
			}
		}()
	}
	for i := range page {
		next <- i
	}
	close(next)
	wg.Wait()
	return out, errors.Join(errs...)
}

// describe is l as the listing shows it, with its settings and its
// month's usage read from the store.
func (s *Server) describe(l listed, now time.Time) (conversationJSON, error) {
	conv, err := s.opts.Store.Conversation(l.conv.Key)
	if err != nil {
		return conversationJSON{}, err
	}
	set := s.opts.Operator.SettingsOf(conv)
	t, err := s.opts.Store.UsageTotals(l.conv.Key, "", now)
	if err != nil {
		return conversationJSON{}, err
	}
	j := conversationJSON{
		Key: l.conv.Key.String(), Platform: l.conv.Key.Platform, Workspace: l.conv.Key.Workspace, Channel: l.conv.Key.Channel,
		Engine: set.Engine, Model: set.Model, Permissions: string(set.Permissions),
		Isolation: isolationJSON{Mode: set.Isolation, Branch: set.Branch},
		State:     l.live.State, Queued: l.live.Queued, Replica: l.live.Replica, LastActivity: l.at,
		Month: usageOf(t.ConversationMonth),
	}
	if name := s.opts.Operator.ChannelName(l.conv.Key); name != "" {
		j.ChannelName = &name
	}
	if !l.live.Started.IsZero() {
		started := l.live.Started
		j.Started = &started
	}
	return j, nil
}

// cursor is the place in the listing after which a page starts: the last
// listed conversation's activity and key.
type cursor struct {
	at  int64 // unix ns
	key string
}

func cursorOf(l listed) cursor { return cursor{at: l.at.UnixNano(), key: l.key} }

func (c cursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.at, 10) + "\x00" + c.key))
}

func parseCursor(s string) (cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, err
	}
	at, key, ok := strings.Cut(string(raw), "\x00")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil {
		return cursor{}, errors.New("not a cursor")
	}
	return cursor{at: n, key: key}, nil
}

// before reports whether the cursor's place comes before l in the
// listing's order.
func (c cursor) before(l listed) bool {
	at := l.at.UnixNano()
	return at < c.at || at == c.at && l.key > c.key
}

func sortListed(all []listed) {
	slices.SortFunc(all, func(a, b listed) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
}

// pathKey reads the {key} of a path: 400 for one that cannot be a
// conversation's key (NUL, "/", "..", too long, not a key's form), 404
// for one that names no conversation here or in the store.
func (s *Server) pathKey(w http.ResponseWriter, r *http.Request) (store.Key, listed, bool) {
	key, ok := parsePathKey(w, r)
	if !ok {
		return store.Key{}, listed{}, false
	}
	conv, err := s.opts.Store.Conversation(key)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "the store cannot be read now: "+err.Error())
		return store.Key{}, listed{}, false
	}
	live, err := s.opts.Operator.LiveStates()
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "the store cannot be read now: "+err.Error())
		return store.Key{}, listed{}, false
	}
	l, running := live[key]
	if conv.LastUsed.IsZero() && !running {
		writeError(w, http.StatusNotFound, "no such conversation")
		return store.Key{}, listed{}, false
	}
	if l.State == "" {
		l.State = "idle"
	}
	at := conv.LastUsed
	if l.Started.After(at) {
		at = l.Started
	}
	return key, listed{conv: conv, live: l, at: at, key: key.String()}, true
}

// writeJSON answers 200 with v.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}
