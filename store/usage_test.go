package store

import (
	"testing"
	"time"
)

func TestUsageTotalsByConversationUserAndDay(t *testing.T) {
	s, path := openTemp(t, nil)
	day1 := time.Date(2026, 3, 31, 23, 0, 0, 0, time.UTC)
	day2 := day1.Add(2 * time.Hour) // 1 April: another day and another month
	turn := Usage{Turns: 1, InputTokens: 10, OutputTokens: 20, CostUSD: 0.5, DurationMS: 1000}
	for _, add := range []struct {
		conv, user string
		at         time.Time
	}{{"slack::C1", "slack:U1", day1}, {"slack::C1", "slack:U2", day1}, {"slack::C2", "slack:U1", day1}, {"slack::C1", "slack:U1", day2}} {
		if err := s.AddUsage(add.conv, add.user, add.at, turn); err != nil {
			t.Fatal(err)
		}
	}
	// Totals survive a restart.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, nil)
	got, err := s.UsageTotals("slack::C1", "slack:U1", day1)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"Conversation": 3, "ConversationMonth": 2, "UserToday": 2, "UserMonth": 2, "Today": 3, "Month": 3}
	have := map[string]Usage{"Conversation": got.Conversation, "ConversationMonth": got.ConversationMonth, "UserToday": got.UserToday,
		"UserMonth": got.UserMonth, "Today": got.Today, "Month": got.Month}
	for k, n := range want {
		u := have[k]
		if u.Turns != n || u.Tokens() != int64(30*n) || u.CostUSD != 0.5*float64(n) || u.DurationMS != int64(1000*n) {
			t.Errorf("%s = %+v, want %d turns' worth", k, u, n)
		}
	}
	got, _ = s.UsageTotals("slack::C1", "slack:U1", day2)
	if got.UserToday.Turns != 1 || got.ConversationMonth.Turns != 1 || got.Conversation.Turns != 3 || got.Month.Turns != 1 {
		t.Errorf("on 1 April: %+v", got)
	}
}
