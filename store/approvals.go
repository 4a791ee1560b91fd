package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Approval is the record of one permission request an agent made and its
// decision: who asked, for which tool, a digest of the arguments (never
// the arguments themselves), and who decided what and when. It is kept
// after the decision, as the audit trail; an undecided record at start-up
// belongs to a turn a restart interrupted.
type Approval struct {
	ID         string    `json:"id"`          // golem's id, what /allow ID names
	Key        Key       `json:"key"`         // the conversation
	Platform   string    `json:"platform"`    // where it was asked
	Tool       string    `json:"tool"`        // e.g. "Write", "Bash"
	ArgsDigest string    `json:"args_digest"` // "sha256:<hex>" of the arguments' JSON
	AskedBy    string    `json:"asked_by"`    // "platform:user" of the turn's sender
	Asked      time.Time `json:"asked"`
	// The question's message, to mark it expired after a restart; empty
	// where it was not posted (a stream, the terminal).
	Channel string `json:"channel,omitempty"`
	Thread  string `json:"thread,omitempty"`
	Message string `json:"message,omitempty"`

	Decision  string      `json:"decision,omitempty"`   // allow, allow_session, deny; "" while pending
	Reason    ApprovalEnd `json:"reason,omitempty"`     // why it ended; "" while pending
	DecidedBy string      `json:"decided_by,omitempty"` // "platform:user", or "golem" for a timeout, stop, expiry
	Decided   time.Time   `json:"decided,omitzero"`
}

// ApprovalEnd is why a permission request ended, as parser.Reason is why
// a run ended.
type ApprovalEnd string

const (
	// ApprovalAnswered: someone allowed or denied it.
	ApprovalAnswered ApprovalEnd = "answered"
	// ApprovalTimedOut: nobody answered within the approval timeout; it
	// was denied. (Records written before 2026-12 say "timeout".)
	ApprovalTimedOut ApprovalEnd = "timed_out"
	// ApprovalStopped: its turn was stopped (/stop, busy: interrupt, a
	// shutdown) while it waited; it was denied.
	ApprovalStopped ApprovalEnd = "stopped"
	// ApprovalTurnTimedOut: its turn ran out of time while it waited.
	ApprovalTurnTimedOut ApprovalEnd = "turn_timed_out"
	// ApprovalTurnEnded: the agent ended its turn (or crashed) while it
	// waited.
	ApprovalTurnEnded ApprovalEnd = "turn_ended"
	// ApprovalExpired: golem restarted while it waited.
	ApprovalExpired ApprovalEnd = "expired"
	// ApprovalPlanMode: refused without asking, since the conversation is
	// in plan mode and its plan is not approved yet.
	ApprovalPlanMode ApprovalEnd = "plan_mode"
)

// SaveApproval records a, or replaces the record with the same ID (the
// decision is a second save).
func (s *Bolt) SaveApproval(a Approval) error {
	if a.ID == "" {
		return errors.New("store: save approval: empty id")
	}
	raw, err := json.Marshal(a)
	if err != nil {
		return wrap("save approval", err)
	}
	if err := s.update(func(tx *bolt.Tx) error { return tx.Bucket(bucketApprovals).Put([]byte(a.ID), raw) }); err != nil {
		return wrap("save approval", err)
	}
	return nil
}

// Approvals returns every record, oldest first (by Asked, then ID); with
// pending set, only the undecided ones.
func (s *Bolt) Approvals(pending bool) ([]Approval, error) {
	var out []Approval
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketApprovals).ForEach(func(k, v []byte) error {
			var a Approval
			if err := json.Unmarshal(v, &a); err != nil {
				return fmt.Errorf("%w: approval %q: %w", ErrCorrupt, k, err)
			}
			if !pending || a.Decision == "" {
				out = append(out, a)
			}
			return nil
		})
	})
	if err != nil {
		return nil, wrap("read approvals", err)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Asked.Equal(out[j].Asked) {
			return out[i].Asked.Before(out[j].Asked)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}
