package core

import (
	"slices"
	"testing"
)

// Among replicas two messages can reach core in another order than the
// platform sent them; while both wait, the platform's order wins.
func TestQueueInOrder(t *testing.T) {
	msg := func(platform, channel, id string) Message {
		return Message{Platform: platform, Channel: channel, ID: id, Text: id}
	}
	for _, tt := range []struct {
		name string
		in   []Message
		want []string
	}{
		{"slack ts", []Message{msg("slack", "C1", "1733112345.000100"), msg("slack", "C1", "1733112346.000001"), msg("slack", "C1", "1733112345.000200")},
			[]string{"1733112345.000100", "1733112345.000200", "1733112346.000001"}},
		{"telegram ids of other lengths", []Message{msg("telegram", "42", "100"), msg("telegram", "42", "99"), msg("telegram", "42", "1000")},
			[]string{"99", "100", "1000"}},
		{"discord snowflakes", []Message{msg("discord", "c", "1180000000000000002"), msg("discord", "c", "1180000000000000001")},
			[]string{"1180000000000000001", "1180000000000000002"}},
		{"no ids: as they came", []Message{{Platform: "http", Channel: "x", Text: "b"}, {Platform: "http", Channel: "x", Text: "a"}},
			[]string{"b", "a"}},
		{"ids that are not numbers: as they came", []Message{msg("slack", "C1", "b"), msg("slack", "C1", "a"), msg("slack", "C1", "01")},
			[]string{"b", "a", "01"}},
		{"another channel is not compared", []Message{msg("slack", "C2", "5"), msg("slack", "C1", "4")},
			[]string{"5", "4"}},
	} {
		var q []Message
		for _, m := range tt.in {
			q = queueInOrder(q, m)
		}
		var got []string
		for _, m := range q {
			got = append(got, m.Text)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
