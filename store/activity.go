package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TurnRecord is one finished turn as the operator's view lists it: who
// asked, when, how it ended, how long it took and what it cost. It never
// holds what was said: the view is for running the bot, not for reading
// people's chats.
type TurnRecord struct {
	ID         string    `json:"id"`
	Key        Key       `json:"key"`
	By         string    `json:"by"` // "platform:user" of the sender
	Started    time.Time `json:"started"`
	Outcome    string    `json:"outcome"` // "done", or the terminal error's reason
	DurationMS int64     `json:"duration_ms"`
	CostUSD    float64   `json:"cost_usd,omitempty"`
	Tokens     int64     `json:"tokens,omitempty"`
}

// ConversationTime is a conversation's key and when it was last used.
type ConversationTime struct {
	Key      Key
	LastUsed time.Time
}

// MaxTurnRecords is how many of its latest turns a conversation keeps.
const MaxTurnRecords = 20

// DayUsage is everyone's usage on one UTC day.
type DayUsage struct {
	Day   string `json:"day"` // "2006-01-02"
	Usage Usage  `json:"usage"`
}

// bucketTurnLog holds each conversation's latest turns (schema version
// 5): keyPrefix, start time, id -> TurnRecord JSON.
var bucketTurnLog = []byte("turnlog")

func createTurnLog(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketTurnLog); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketTurnLog, err)
	}
	return nil
}

// keyPrefix is the length of key's stored form, then the form itself:
// no conversation's records share a prefix with another's.
func keyPrefix(key Key) []byte {
	k := key.String()
	return append(binary.AppendUvarint(nil, uint64(len(k))), k...)
}

// ListConversations returns every stored conversation's key and last
// use, by key. It reads only the time of each record (see LastUsedOf):
// the operator's listing sorts thousands of them per request and decodes
// only the page it shows.
func (s *Bolt) ListConversations() ([]ConversationTime, error) {
	var out []ConversationTime
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketConversations)
		out = make([]ConversationTime, 0, b.Stats().KeyN)
		return b.ForEach(func(k, v []byte) error {
			key, err := ParseKey(string(k))
			if err != nil {
				return fmt.Errorf("%w: %w", ErrCorrupt, err)
			}
			at, ok := LastUsedOf(v)
			if !ok {
				c, err := decodeConversation(key, v)
				if err != nil {
					return err
				}
				at = c.LastUsed
			}
			out = append(out, ConversationTime{Key: key, LastUsed: at})
			return nil
		})
	})
	if err != nil {
		return nil, wrap("list conversations", err)
	}
	return out, nil
}

// LastUsedOf reads the LastUsed of a conversation's record, in the JSON
// form both backends keep (see convRecord), without decoding the record:
// its "u" member is the only place the bytes `"u":` can be, since a quote
// inside a JSON string is escaped. ok is false for a record it cannot
// read so (decode it then).
func LastUsedOf(raw []byte) (time.Time, bool) {
	i := bytes.Index(raw, []byte(`"u":`))
	if i < 0 {
		return time.Time{}, len(raw) > 0 && raw[0] == '{' // never used
	}
	rest := raw[i+4:]
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	ns, err := strconv.ParseInt(string(rest[:n]), 10, 64)
	if err != nil || n == len(rest) || rest[n] != ',' && rest[n] != '}' {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

// RecordTurn keeps t as its conversation's latest turn, forgetting the
// conversation's turns past MaxTurnRecords (the oldest by Started).
func (s *Bolt) RecordTurn(t TurnRecord) error {
	raw, err := encodeTurnRecord(t)
	if err != nil {
		return wrap("record turn", err)
	}
	if err := s.update(func(tx *bolt.Tx) error { return recordTurn(tx, t, raw) }); err != nil {
		return wrap("record turn", err)
	}
	return nil
}

// encodeTurnRecord checks t and encodes it for recordTurn.
func encodeTurnRecord(t TurnRecord) ([]byte, error) {
	if t.ID == "" || t.Key.IsZero() {
		return nil, errors.New("empty id or key")
	}
	return json.Marshal(t)
}

// recordTurn is RecordTurn within tx, of t encoded as raw.
func recordTurn(tx *bolt.Tx, t TurnRecord, raw []byte) error {
	prefix := keyPrefix(t.Key)
	name := binary.BigEndian.AppendUint64(bytes.Clone(prefix), uint64(t.Started.UnixNano()))
	name = append(name, t.ID...)
	b := tx.Bucket(bucketTurnLog)
	if err := b.Put(name, raw); err != nil {
		return err
	}
	var names [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		names = append(names, bytes.Clone(k))
	}
	for _, k := range names[:max(0, len(names)-MaxTurnRecords)] {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// RecentTurns returns the turns key keeps, newest first.
func (s *Bolt) RecentTurns(key Key) ([]TurnRecord, error) {
	var out []TurnRecord
	prefix := keyPrefix(key)
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketTurnLog).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var t TurnRecord
			if err := json.Unmarshal(v, &t); err != nil {
				return fmt.Errorf("%w: turn record %q: %w", ErrCorrupt, k, err)
			}
			out = append(out, t)
		}
		return nil
	})
	if err != nil {
		return nil, wrap("read recent turns", err)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// Days lists the UTC days from from's to to's, oldest first; nil when to
// is before from.
func Days(from, to time.Time) []string {
	var days []string
	end := to.UTC().Format("2006-01-02")
	for d := from.UTC(); len(days) < 3660; d = d.AddDate(0, 0, 1) {
		day := d.Format("2006-01-02")
		if day > end {
			break
		}
		days = append(days, day)
	}
	return days
}

// DailyUsage returns everyone's usage on each UTC day from from's to to's,
// oldest first, a zero Usage for a day without turns.
func (s *Bolt) DailyUsage(from, to time.Time) ([]DayUsage, error) {
	days := Days(from, to)
	out := make([]DayUsage, len(days))
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketUsage)
		for i, day := range days {
			out[i].Day = day
			if raw := b.Get([]byte("d\x00" + day)); raw != nil {
				if err := decodeUsage(raw, &out[i].Usage); err != nil {
					return fmt.Errorf("read usage of %s: %w", day, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap("read daily usage", err)
	}
	return out, nil
}
