package store

import "time"

// Store is golem's state across restarts, whatever keeps it. Every method
// is safe for concurrent use by many goroutines, and a write returns once
// it is durable (fsynced by bbolt, committed by a quorum in etcd).
//
// The error contract, which storetest checks on every backend: after
// Close every call fails with an error wrapping ErrClosed (Close again
// returns nil); an empty key or id is an error; Save of a value over
// MaxValue fails with ErrTooLarge; Open fails with ErrCorrupt for data
// that is not a golem store and ErrSchemaTooNew for a newer golem's.
type Store interface {
	Conversations
	Seen
	Turns
	ApprovalLog
	UsageLedger
	State
	Schedules
	Activity
	// Close finishes the writes already submitted and releases the
	// store.
	Close() error
}

// Conversations are each conversation's agent session and settings.
type Conversations interface {
	// Conversation returns what is stored for key, or a Conversation with
	// only Key set when nothing is.
	Conversation(key Key) (Conversation, error)
	// SaveConversation stores c under c.Key, replacing what was there. A
	// zero LastUsed is stored as the current time.
	SaveConversation(c Conversation) error
	// UpdateConversation changes what is stored for key atomically: fn gets
	// the stored conversation (only Key set when nothing is) and reports
	// whether to save it, so concurrent updates of different fields never
	// undo each other. fn may run more than once and must not block; a zero
	// LastUsed is saved as the current time.
	UpdateConversation(key Key, fn func(c *Conversation) bool) error
	// ClearSession forgets key's session id, keeping its engine and model;
	// a key with nothing stored is left alone.
	ClearSession(key Key) error
}

// Seen is the dedupe of platform event ids.
type Seen interface {
	// MarkSeen records the event id and reports whether this is the first
	// time it is seen within its time to live: of many concurrent calls
	// with the same id exactly one gets true. The answer survives Close and
	// Open; once ttl has passed the id counts as new again.
	MarkSeen(id string, ttl time.Duration) (first bool, err error)
}

// Turns are the turns in flight: begun and not ended. What is left at
// start-up was interrupted by a crash or restart.
type Turns interface {
	// BeginTurn records t, or replaces the record with the same ID (once
	// the answer message exists, once the agent runs).
	BeginTurn(t InFlight) error
	// FinishTurn writes what a turn leaves once it has ended (see
	// TurnEnd) in one transaction: all its parts or none. The backend
	// that fences conversations' records (etcdstore) refuses the whole
	// transaction when it changes the record of a conversation another
	// replica owns now; it then keeps the usage and the turn's record on
	// their own, as AddUsage and RecordTurn would (what the turn used
	// counts whoever owns the conversation), and returns an error
	// wrapping ErrFenced.
	FinishTurn(e TurnEnd) error
	// EndTurn forgets the turn; ending one not recorded is not an error.
	EndTurn(id string) error
	// InFlightTurns returns the turns begun and not ended, oldest first
	// (by Started, then ID).
	InFlightTurns() ([]InFlight, error)
}

// ApprovalLog is the audit trail of the agents' permission requests.
type ApprovalLog interface {
	// SaveApproval records a, or replaces the record with the same ID (the
	// decision is a second save).
	SaveApproval(a Approval) error
	// Approvals returns every record, oldest first (by Asked, then ID);
	// with pending set, only the undecided ones.
	Approvals(pending bool) ([]Approval, error)
}

// UsageLedger adds up what turns cost.
type UsageLedger interface {
	// AddUsage adds one finished turn's usage to every total it counts in
	// (see UsageTotals), atomically, at time at.
	AddUsage(conversation Key, user string, at time.Time, u Usage) error
	// UsageTotals reads the totals of conversation and user at time at.
	UsageTotals(conversation Key, user string, at time.Time) (UsageTotals, error)
}

// Activity is what the operator's view reads across conversations.
type Activity interface {
	// ListConversations returns every stored conversation's key and
	// last use, by key (Conversation reads the rest).
	ListConversations() ([]ConversationTime, error)
	// RecordTurn keeps t as its conversation's latest turn; a
	// conversation keeps its last MaxTurnRecords (the oldest by Started
	// go first).
	RecordTurn(t TurnRecord) error
	// RecentTurns returns the turns key keeps, newest first.
	RecentTurns(key Key) ([]TurnRecord, error)
	// DailyUsage returns everyone's usage on each UTC day from from's to
	// to's, oldest first, a zero Usage for a day without turns.
	DailyUsage(from, to time.Time) ([]DayUsage, error)
}

// State is small adapter state under namespaced keys ("telegram.offset",
// "slack.pending"): cursors and journals.
type State interface {
	// Load returns the value saved under key, the caller's own copy, or
	// nil and no error when there is none.
	Load(key string) ([]byte, error)
	// Save stores value under key (the store keeps its own copy); a nil
	// value removes the key. A value over MaxValue fails with ErrTooLarge.
	Save(key string, value []byte) error
	// UpdateState changes key's value atomically: fn gets the value there
	// (nil when none, its own copy) and returns the new one (nil removes
	// the key) and whether to write it. A writer that comes between has fn
	// called again with its value, so fn may run more than once and must
	// do nothing else. A new value over MaxValue fails with ErrTooLarge.
	UpdateState(key string, fn func(old []byte) (value []byte, write bool)) error
}

var _ Store = (*Bolt)(nil)
