// Package store is what golem keeps across restarts: conversation
// sessions and settings, seen platform event ids, turns in flight, the
// approvals' audit trail, usage totals (per conversation, user, day and
// month) and small adapter state (cursors, journals). Store is its
// interface; Bolt, one bbolt file on one machine, is the default backend,
// and store/etcdstore keeps the same in etcd. store/storetest is the
// conformance suite every backend passes. Key is the conversation key that
// every call and record takes.
package store

import (
	"errors"
	"time"
)

// ErrLocked means another process has the database file open.
var ErrLocked = errors.New("store: the database file is in use by another process")

// ErrCorrupt means the file is not a readable golem store: it is damaged,
// it is not a bbolt file at all, or it is a bbolt file of another program.
var ErrCorrupt = errors.New("store: the database file is damaged or is not a golem store")

// ErrSchemaTooNew means the file was written by a newer golem whose schema
// version this code does not know; opening it could lose data, so Open
// refuses.
var ErrSchemaTooNew = errors.New("store: the database file was written by a newer golem")

// ErrClosed is wrapped by the error of every call to a Store after Close.
var ErrClosed = errors.New("store: closed")

// ErrTooLarge is wrapped by the error of a Save whose value is over
// MaxValue. Every backend refuses it, so that state which fits one machine's
// store also fits etcd's request limit.
var ErrTooLarge = errors.New("store: value too large")

// ErrFenced is the error of a write to a conversation's records that
// another replica owns now: this replica lost it (its lease expired while
// it was cut off), and etcd refused the stale write instead of applying it.
var ErrFenced = errors.New("store: refused: another replica owns this conversation now")

// MaxValue is the largest value Save takes: etcd's default request limit
// (1.5 MiB) less room for the key and the request around it. Large things
// (files, chat context) stay out of the store.
const MaxValue = 3<<19 - 64<<10

// Conversation is what the store keeps per conversation key.
type Conversation struct {
	Key       Key
	Engine    string // "" = the configured default
	Model     string // "" = the engine's default
	SessionID string // "" = no session yet
	LastUsed  time.Time
	// Sessions are the agent sessions this conversation has been in (its
	// own and those /resume took), oldest first, at most MaxSessions: who
	// may /resume one of them again needs no approver.
	Sessions []string
}

// MaxSessions bounds Conversation.Sessions.
const MaxSessions = 20

// AddSession returns sessions with id last, once, and at most MaxSessions.
func AddSession(sessions []string, id string) []string {
	if id == "" {
		return sessions
	}
	out := make([]string, 0, len(sessions)+1)
	for _, s := range sessions {
		if s != id {
			out = append(out, s)
		}
	}
	out = append(out, id)
	return out[max(0, len(out)-MaxSessions):]
}

// InFlight is a turn that has started and not yet ended. What is left at
// start-up was interrupted by a crash or restart.
type InFlight struct {
	ID       string // unique per turn
	Key      Key    // conversation key
	Platform string
	Channel  string
	Thread   string
	ReplyTo  string
	// The answer message, once posted (empty before).
	AnswerChannel string
	AnswerThread  string
	AnswerID      string
	Started       time.Time
	// The agent process running the turn, once started (0 before, and for
	// engines that run in-process): its process group id (the CLI's pid)
	// and its start time in clock ticks after boot, which tells it from an
	// unrelated process that reuses the pid. At start-up a group still
	// alive is stopped before the turn is marked interrupted.
	AgentGroup int
	AgentStart uint64
	// Stream marks a turn whose answer went to a stream (the HTTP API, the
	// terminal) rather than a posted message; it is recorded only while an
	// agent process runs, so that a restart can stop it.
	Stream bool
	// Replica names the replica running the turn ("" for a golem alone):
	// only that replica, restarted, may stop its agent by process group.
	Replica string `json:",omitempty"`
	// Mail, set on a turn's first record, is the mailbox entry of the
	// message the turn runs (core.Cluster's): a store that keeps the
	// mailbox (see MailStriker) strikes it in the transaction that writes
	// the record, so that a replica killed in between leaves either the
	// mail, which the next owner runs, or the record, which it marks
	// interrupted. It is not stored.
	Mail string `json:"-"`
}

// MailStriker is a store that strikes InFlight.Mail as it records the
// turn (etcdstore, once told where the mailbox is). StrikesMail false: the
// caller strikes the mail itself.
type MailStriker interface {
	StrikesMail() bool
}
