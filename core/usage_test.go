package core_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/store"
)

// clock is a settable Options.Now.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.set(t)
	return c
}
func (c *clock) set(t time.Time)     { c.ns.Store(t.UnixNano()) }
func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

// The fake agent reports 10 input and 20 output tokens and $0.0012 a turn.
func TestUsageRecordedShownAndInTheFooter(t *testing.T) {
	clk := newClock(time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC))
	h := newHarness(t, chatLimits, func(o *core.Options) {
		o.Now, o.Footer = clk.now, true
		o.Models = map[string]string{"claude-code": "sonnet"}
	})
	h.say("alice", "hi")
	h.rec.waitText("echo: hi\n\nclaude-code · sonnet · 30 tokens · $0.0012 · ")

	key := core.KeyFor(core.Message{Platform: "rec", Channel: "C1"}, core.ScopeChannel)
	tot, err := h.store.UsageTotals(key, "rec:alice", clk.now())
	if err != nil {
		t.Fatal(err)
	}
	want := store.Usage{Turns: 1, InputTokens: 10, OutputTokens: 20, CostUSD: 0.0012}
	for name, u := range map[string]store.Usage{"conversation": tot.Conversation, "conversation month": tot.ConversationMonth,
		"user today": tot.UserToday, "user month": tot.UserMonth, "today": tot.Today, "month": tot.Month} {
		if u.Turns != want.Turns || u.Tokens() != 30 || u.CostUSD != want.CostUSD || u.DurationMS <= 0 {
			t.Errorf("%s usage = %+v, want %+v and a duration", name, u, want)
		}
	}

	clk.add(24 * time.Hour) // the next day: today's totals start again, the month's go on
	h.say("alice", "/usage")
	h.rec.waitText("**Usage**")
	got := h.rec.all()
	for _, line := range []string{"• This conversation: 1 turn, 30 tokens, $0.0012,", "• You today: 0 turns,",
		"• You this month: 1 turn, 30 tokens, $0.0012,", "• Everyone today: 0 turns,", "• Everyone this month: 1 turn,"} {
		if !strings.Contains(got, line) {
			t.Errorf("/usage lacks %q:\n%s", line, got)
		}
	}
}

func TestDailyBudgetRefusesAndResetsAtMidnight(t *testing.T) {
	clk := newClock(time.Date(2026, 3, 31, 23, 30, 0, 0, time.UTC))
	h := newHarness(t, chatLimits, func(o *core.Options) {
		o.Now = clk.now
		o.Budgets = core.Budgets{DailyUSDPerUser: 0.001}
	})
	h.say("alice", "first")
	h.rec.waitText("echo: first") // $0.0012: past the budget now
	h.say("alice", "second")
	h.rec.waitText("daily budget is $0.0010 (`limits.daily_usd_per_user`). It resets at 00:00 UTC (in 0 h 30 min).")
	if strings.Contains(h.rec.all(), "echo: second") {
		t.Fatal("a message past the budget ran")
	}
	clk.add(time.Hour)
	h.say("alice", "third")
	h.rec.waitText("echo: third")
	if n := strings.Count(h.rec.all(), "💸"); n != 1 {
		t.Errorf("%d refusals, want 1:\n%s", n, h.rec.all())
	}
}

func TestMonthlyConversationBudgetAndExemptUsers(t *testing.T) {
	clk := newClock(time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC))
	h := newHarness(t, chatLimits, func(o *core.Options) {
		o.Now = clk.now
		o.Allow = []string{"rec:alice", "rec:bob"}
		o.Budgets = core.Budgets{MonthlyUSDPerConversation: 0.001, Exempt: []string{"rec:bob"}}
	})
	h.say("alice", "first")
	h.rec.waitText("echo: first")
	h.say("alice", "second")
	h.rec.waitText("monthly budget is $0.0010 (`limits.monthly_usd_per_conversation`). It resets on 1 April 00:00 UTC (in 12 h 0 min).")
	h.say("bob", "exempt")
	h.rec.waitText("echo: exempt")
	clk.set(time.Date(2026, 4, 1, 0, 1, 0, 0, time.UTC))
	h.say("alice", "april")
	h.rec.waitText("echo: april")
	if strings.Contains(h.rec.all(), "echo: second") {
		t.Fatal("a message past the budget ran")
	}
}

// A message past its budget is refused also when it comes while an answer
// runs: steered, it is not written to the agent; under busy: interrupt, it
// stops nothing.
func TestBudgetRefusesWhileAnAnswerRuns(t *testing.T) {
	for _, busy := range []core.Busy{core.BusySteer, core.BusyInterrupt} {
		t.Run(string(busy), func(t *testing.T) {
			clk := newClock(time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC))
			h := newHarness(t, chatLimits, func(o *core.Options) {
				o.Now = clk.now
				o.Busy = busy
				o.Allow = []string{"rec:alice", "rec:bob"}
				o.Budgets = core.Budgets{DailyUSDPerUser: 0.001}
			})
			h.say("alice", "first")
			h.rec.waitText("echo: first") // alice is past her budget now
			h.say("bob", "!text 20\n!sleep 1s\nbob's answer")
			h.rec.waitFor("bob's answer's start", func(texts []string) bool { return len(texts) == 2 && len(texts[1]) >= 20 })
			h.say("alice", "also this")
			h.rec.waitText("daily budget is $0.0010")
			h.rec.waitText("echo: bob's answer")
			h.stop()
			all := h.rec.all()
			if strings.Contains(all, "heard: also this") || strings.Contains(all, "echo: also this") || strings.Contains(all, "Stopped") {
				t.Errorf("a message past its budget reached the agent or stopped the answer:\n%s", all)
			}
		})
	}
}
