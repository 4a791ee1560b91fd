package store

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bucketUsage holds usage totals (schema version 2): key -> Usage JSON,
// the keys those of usageKeys.
var bucketUsage = []byte("usage")

// createUsage adds the usage bucket.
func createUsage(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketUsage); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketUsage, err)
	}
	return nil
}

// Usage is what turns cost, added up.
type Usage struct {
	Turns        int     `json:"turns"`
	InputTokens  int64   `json:"input_tokens,omitempty"`
	OutputTokens int64   `json:"output_tokens,omitempty"`
	CostUSD      float64 `json:"cost_usd,omitempty"` // where the CLI reports it
	DurationMS   int64   `json:"duration_ms,omitempty"`
}

// Add returns u plus v.
func (u Usage) Add(v Usage) Usage {
	return Usage{Turns: u.Turns + v.Turns, InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens,
		CostUSD: u.CostUSD + v.CostUSD, DurationMS: u.DurationMS + v.DurationMS}
}

// Tokens is the input and output tokens together.
func (u Usage) Tokens() int64 { return u.InputTokens + u.OutputTokens }

// UsageTotals are the totals that /usage shows and budgets check, for one
// conversation and user at one time (days and months are UTC's).
type UsageTotals struct {
	Conversation      Usage // the conversation, ever
	ConversationMonth Usage // the conversation, this month
	UserToday         Usage // the user, today, in every conversation
	UserMonth         Usage // the user, this month
	Today             Usage // everyone, today
	Month             Usage // everyone, this month
}

// usageKeys are the keys of UsageTotals' fields, in its order.
func usageKeys(key Key, user string, at time.Time) [6]string {
	conversation := key.String()
	day, month := at.UTC().Format("2006-01-02"), at.UTC().Format("2006-01")
	return [6]string{
		"c\x00" + conversation,
		"c\x00" + conversation + "\x00" + month,
		"u\x00" + user + "\x00" + day,
		"u\x00" + user + "\x00" + month,
		"d\x00" + day,
		"m\x00" + month,
	}
}

// AddUsage adds one finished turn's usage to every total it counts in:
// its conversation's (ever and this month), its user's ("platform:id",
// today and this month) and everyone's (today and this month), at time at.
func (s *Bolt) AddUsage(conversation Key, user string, at time.Time, u Usage) error {
	if err := s.update(func(tx *bolt.Tx) error { return addUsage(tx, conversation, user, at, u) }); err != nil {
		return wrap("add usage", err)
	}
	return nil
}

// addUsage is AddUsage within tx.
func addUsage(tx *bolt.Tx, conversation Key, user string, at time.Time, u Usage) error {
	b := tx.Bucket(bucketUsage)
	for _, k := range usageKeys(conversation, user, at) {
		var have Usage
		if raw := b.Get([]byte(k)); raw != nil {
			if err := decodeUsage(raw, &have); err != nil {
				return fmt.Errorf("read %q: %w", k, err)
			}
		}
		raw, err := encodeUsage(have.Add(u))
		if err != nil {
			return err
		}
		if err := b.Put([]byte(k), raw); err != nil {
			return err
		}
	}
	return nil
}

// UsageTotals reads the totals of conversation and user at time at.
func (s *Bolt) UsageTotals(conversation Key, user string, at time.Time) (UsageTotals, error) {
	var t UsageTotals
	fields := []*Usage{&t.Conversation, &t.ConversationMonth, &t.UserToday, &t.UserMonth, &t.Today, &t.Month}
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketUsage)
		for i, k := range usageKeys(conversation, user, at) {
			if raw := b.Get([]byte(k)); raw != nil {
				if err := decodeUsage(raw, fields[i]); err != nil {
					return fmt.Errorf("read %q: %w", k, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return t, wrap("read usage", err)
	}
	return t, nil
}
