package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/store"
)

// detailJSON is GET /v1/conversations/{key}: the listing's fields, the
// last turns (no message text), the approvals waiting and the operator's
// actions.
type detailJSON struct {
	conversationJSON
	Turns    []store.TurnRecord `json:"turns"`
	Pending  []pendingJSON      `json:"pending"`
	Audit    []auditEntry       `json:"audit"`
	Worktree *worktreeJSON      `json:"worktree"` // null: none (yet), or shared
	// Schedules are the prompts scheduled into it, without their text.
	Schedules []scheduleJSON `json:"schedules"`
}

type scheduleJSON struct {
	ID          string    `json:"id"`
	Name        string    `json:"name,omitempty"`
	User        string    `json:"user"` // "platform:user" who set it
	Spec        string    `json:"spec,omitempty"`
	At          time.Time `json:"at,omitzero"`
	TZ          string    `json:"tz,omitempty"`
	Paused      bool      `json:"paused"`
	LastRun     time.Time `json:"last_run,omitzero"`
	LastOutcome string    `json:"last_outcome,omitempty"`
	Failures    int       `json:"failures"`
}

type pendingJSON struct {
	ID      string    `json:"id"`
	Tool    string    `json:"tool"`
	AskedBy string    `json:"asked_by"`
	Asked   time.Time `json:"asked"`
	Options []string  `json:"options,omitempty"` // an AskUserQuestion's, by index
	Here    bool      `json:"here"`              // false: another replica's turn waits for it
	Replica string    `json:"replica,omitempty"` // that replica
	Digest  string    `json:"args_digest"`
}

type worktreeJSON struct {
	Branch string `json:"branch"`
	Tree   string `json:"tree"`
	Base   string `json:"base"`
	Dirty  bool   `json:"dirty"`
}

// conversation answers GET /v1/conversations/{key}.
func (s *Server) conversation(w http.ResponseWriter, r *http.Request) {
	key, l, ok := s.pathKey(w, r)
	if !ok {
		return
	}
	j, err := s.describe(l, time.Now())
	var turns []store.TurnRecord
	if err == nil {
		turns, err = s.opts.Store.RecentTurns(key)
	}
	var recs []store.Approval
	if err == nil {
		recs, err = s.opts.Store.Approvals(true)
	}
	var audit []auditEntry
	if err == nil {
		audit, err = s.audit.read(key)
	}
	var schedules []store.Schedule
	if err == nil {
		schedules, err = s.opts.Store.ConversationSchedules(key)
	}
	if err != nil {
		s.log.Error("http: read a conversation", "conversation", key, "err", err)
		writeError(w, http.StatusServiceUnavailable, "the store cannot be read now: "+err.Error())
		return
	}
	d := detailJSON{conversationJSON: j, Turns: turns, Pending: []pendingJSON{}, Audit: audit, Schedules: []scheduleJSON{}}
	for _, sc := range schedules {
		d.Schedules = append(d.Schedules, scheduleJSON{ID: sc.ID, Name: sc.Name, User: sc.Platform + ":" + sc.User, Spec: sc.Spec, At: sc.At,
			TZ: sc.TZ, Paused: sc.Paused, LastRun: sc.LastRun, LastOutcome: sc.LastOutcome, Failures: sc.Failures})
	}
	if d.Turns == nil {
		d.Turns = []store.TurnRecord{}
	}
	here := map[string]bool{}
	for _, p := range s.opts.Operator.PendingApprovals(key) {
		here[p.ID] = true
		pj := pendingJSON{ID: p.ID, Tool: p.Tool, AskedBy: p.AskedBy, Asked: p.Asked, Here: true, Digest: p.ArgsDigest}
		if len(p.Questions) > 0 {
			for _, o := range p.Questions[0].Options {
				pj.Options = append(pj.Options, o.Label)
			}
		}
		d.Pending = append(d.Pending, pj)
	}
	elsewhere := l.live.State != "idle" && l.live.Replica != "" && l.live.Replica != s.opts.Replica
	for _, a := range recs { // asked on another replica: shown, answered there
		if elsewhere && a.Key == key && !here[a.ID] {
			d.Pending = append(d.Pending, pendingJSON{ID: a.ID, Tool: a.Tool, AskedBy: a.AskedBy, Asked: a.Asked, Digest: a.ArgsDigest, Replica: l.live.Replica})
		}
	}
	wt, dirty, found, err := s.opts.Operator.Worktree(r.Context(), key)
	switch {
	case err != nil:
		s.log.Warn("http: find a conversation's worktree", "conversation", key, "err", err)
	case found:
		d.Worktree = &worktreeJSON{Branch: wt.Branch, Tree: wt.Tree, Base: wt.Base, Dirty: dirty}
		d.Isolation.Dirty = &dirty
	}
	writeJSON(w, d)
}

// stopConversation answers POST /v1/conversations/{key}/stop: /stop,
// on whichever replica runs the conversation.
func (s *Server) stopConversation(w http.ResponseWriter, r *http.Request) {
	key, _, ok := s.pathKey(w, r)
	if !ok {
		return
	}
	text, err := s.opts.Operator.StopConversation(r.Context(), key)
	if err != nil {
		s.log.Error("http: /stop", "conversation", key, "err", err)
		writeError(w, http.StatusServiceUnavailable, "the conversation could not be stopped: "+err.Error())
		return
	}
	s.record(key, "stop", text)
	writeJSON(w, actionJSON{OK: true, Text: text})
}

// newConversation answers POST /v1/conversations/{key}/new: /new, on
// whichever replica runs the conversation.
func (s *Server) newConversation(w http.ResponseWriter, r *http.Request) {
	key, _, ok := s.pathKey(w, r)
	if !ok {
		return
	}
	text, err := s.opts.Operator.NewSession(r.Context(), key)
	if err != nil {
		s.log.Error("http: /new", "conversation", key, "err", err)
		writeError(w, http.StatusServiceUnavailable, "the session could not be forgotten: "+err.Error())
		return
	}
	s.record(key, "new", text)
	writeJSON(w, actionJSON{OK: true, Text: text})
}

// diff answers GET /v1/conversations/{key}/diff: /diff's text.
func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	key, _, ok := s.pathKey(w, r)
	if !ok {
		return
	}
	text, err := s.opts.Operator.Diff(key)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "/diff failed: "+err.Error())
		return
	}
	writeJSON(w, actionJSON{OK: true, Text: text})
}

// events answers GET /v1/conversations/{key}/events: the running answer
// as Server-Sent Events, joined mid-turn with its text so far, ending
// with its terminal event; 204 when no answer runs, 409 when it runs on
// another replica.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	key, l, ok := s.pathKey(w, r)
	if !ok || !s.here(w, l) {
		return
	}
	q := core.NewEventQueue()
	stop, running := s.opts.Operator.Watch(key, q.Push)
	if !running {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	defer stop()
	if !s.streams.open() {
		return
	}
	defer s.streams.done()
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if err := rc.Flush(); err != nil {
		q.Close()
		return
	}
	s.pump(w, r, rc, q, s.log.With("conversation", key, "watch", true), time.Now())
}

// here refuses, 409, to watch a conversation that another replica runs:
// its answer streams from that replica's page.
func (s *Server) here(w http.ResponseWriter, l listed) bool {
	if l.live.State != "idle" && l.live.Replica != "" && l.live.Replica != s.opts.Replica {
		writeError(w, http.StatusConflict, "this conversation runs on replica "+l.live.Replica+": watch it from that replica's page")
		return false
	}
	return true
}

type actionJSON struct {
	OK   bool   `json:"ok"`
	Text string `json:"text"`
}

// auditEntry is one thing the operator did to a conversation.
type auditEntry struct {
	At     time.Time `json:"at"`
	By     string    `json:"by"`     // core.Operator
	Action string    `json:"action"` // stop, new, allow, allow_session, deny
	Result string    `json:"result"` // what golem answered
}

// maxAudit bounds the entries kept per conversation.
const maxAudit = 50

// auditLog keeps each conversation's operator actions in the store's
// state, under "operator.audit." and the key, newest last. Each entry is
// added by one atomic update of the list (store.State.UpdateState), so
// that replicas adding at once keep each other's.
type auditLog struct {
	st store.State
}

func auditKey(key store.Key) string { return "operator.audit." + key.String() }

func (a *auditLog) read(key store.Key) ([]auditEntry, error) {
	raw, err := a.st.Load(auditKey(key))
	if err != nil {
		return []auditEntry{}, err
	}
	return decodeAudit(raw), nil
}

// decodeAudit is the stored list; an absent or unreadable one is empty
// (shown so, and overwritten by the next entry).
func decodeAudit(raw []byte) []auditEntry {
	var out []auditEntry
	if raw == nil || json.Unmarshal(raw, &out) != nil || out == nil {
		return []auditEntry{}
	}
	return out
}

func (a *auditLog) add(key store.Key, e auditEntry) error {
	return a.st.UpdateState(auditKey(key), func(old []byte) ([]byte, bool) {
		have := append(decodeAudit(old), e)
		raw, err := json.Marshal(have[max(0, len(have)-maxAudit):])
		return raw, err == nil
	})
}

// record adds the operator's action to key's audit (and the log).
func (s *Server) record(key store.Key, action, result string) {
	s.log.Info("http: operator action", "conversation", key, "action", action, "by", core.Operator)
	if err := s.audit.add(key, auditEntry{At: time.Now(), By: core.Operator, Action: action, Result: result}); err != nil {
		s.log.Error("http: record the operator's action", "conversation", key, "err", err)
	}
}
