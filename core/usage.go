package core

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/store"
)

// Budgets limit what the agents may spend, as far as their CLIs report a
// cost: a message from someone past a budget is refused before anything
// runs, saying which limit and when it resets. Days and months are UTC's.
// Zero fields set no limit.
type Budgets struct {
	DailyUSDPerUser           float64  // per "platform:user", all conversations, per day
	MonthlyUSDPerConversation float64  // per conversation key, per month
	Exempt                    []string // "platform:user" that are never refused
}

// now is the dispatcher's clock (Options.Now).
func (d *Dispatcher) now() time.Time {
	if d.opts.Now != nil {
		return d.opts.Now()
	}
	return time.Now()
}

func userOf(m Message) string { return m.Platform + ":" + m.User }

// overBudget returns the refusal for a message whose sender or
// conversation is past a budget, or "".
func (d *Dispatcher) overBudget(m Message) string {
	b := d.opts.Budgets
	if b.DailyUSDPerUser <= 0 && b.MonthlyUSDPerConversation <= 0 || slices.Contains(b.Exempt, userOf(m)) {
		return ""
	}
	now := d.now()
	t, err := d.opts.Store.UsageTotals(KeyFor(m, d.opts.Scope), userOf(m), now)
	if err != nil {
		d.log.Error("read usage for the budget", "platform", m.Platform, "err", err)
		return "" // a store that cannot be read stops nothing that would run anyway
	}
	day := now.UTC().Truncate(24 * time.Hour)
	if b.DailyUSDPerUser > 0 && t.UserToday.CostUSD >= b.DailyUSDPerUser {
		reset := day.Add(24 * time.Hour)
		return fmt.Sprintf("💸 You have used %s today, your daily budget is %s (`limits.daily_usd_per_user`). It resets at %s (in %s).",
			dollars(t.UserToday.CostUSD), dollars(b.DailyUSDPerUser), reset.Format("15:04 UTC"), until(now, reset))
	}
	if b.MonthlyUSDPerConversation > 0 && t.ConversationMonth.CostUSD >= b.MonthlyUSDPerConversation {
		y, mo, _ := now.UTC().Date()
		reset := time.Date(y, mo+1, 1, 0, 0, 0, 0, time.UTC)
		return fmt.Sprintf("💸 This conversation has used %s this month, its monthly budget is %s (`limits.monthly_usd_per_conversation`). It resets on %s (in %s).",
			dollars(t.ConversationMonth.CostUSD), dollars(b.MonthlyUSDPerConversation), reset.Format("2 January 15:04 UTC"), until(now, reset))
	}
	return ""
}

// until says how long from now to t, in hours and minutes.
func until(now, t time.Time) string {
	d := t.Sub(now).Round(time.Minute)
	if d >= 24*time.Hour {
		return fmt.Sprintf("%d days %d h", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
	}
	return fmt.Sprintf("%d h %d min", d/time.Hour, d%time.Hour/time.Minute)
}

// turnUsage is what one finished turn used: the tokens and cost its done
// event reports, and the time the user waited for the agent (measured, so
// that it means the same for every CLI).
func turnUsage(ev parser.Event, took time.Duration) store.Usage {
	u := store.Usage{Turns: 1, DurationMS: took.Milliseconds()}
	if ev.Type != parser.Done || ev.Stats == nil {
		return u
	}
	if st := ev.Stats; st.CostUSD != nil {
		u.CostUSD = *st.CostUSD
	}
	if st := ev.Stats; st.InputTokens != nil {
		u.InputTokens = *st.InputTokens
	}
	if st := ev.Stats; st.OutputTokens != nil {
		u.OutputTokens = *st.OutputTokens
	}
	return u
}

// footer is the line under a final answer with Options.Footer:
// "claude-code · sonnet · 12.3k tokens · $0.04 · 45 s"; what the CLI did
// not report is left out.
func footer(engine, model string, u store.Usage) string {
	parts := []string{engine}
	if model != "" {
		parts = append(parts, model)
	}
	if n := u.Tokens(); n > 0 {
		parts = append(parts, tokens(n)+" tokens")
	}
	if u.CostUSD > 0 {
		parts = append(parts, dollars(u.CostUSD))
	}
	parts = append(parts, seconds(time.Duration(u.DurationMS)*time.Millisecond))
	return strings.Join(parts, " · ")
}

func tokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func dollars(v float64) string {
	if v < 0.01 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}

func seconds(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%d s", int(d.Round(time.Second).Seconds()))
}

// usage answers /usage: this conversation's, the sender's, and everyone's
// totals of today and this month.
func (d *Dispatcher) usage(m Message, key store.Key) (string, error) {
	t, err := d.opts.Store.UsageTotals(key, userOf(m), d.now())
	if err != nil {
		return "", err
	}
	line := func(what string, u store.Usage) string {
		s := fmt.Sprintf("• %s: %d turns", what, u.Turns)
		if u.Turns == 1 {
			s = strings.TrimSuffix(s, "s")
		}
		if n := u.Tokens(); n > 0 {
			s += ", " + tokens(n) + " tokens"
		}
		if u.CostUSD > 0 {
			s += ", " + dollars(u.CostUSD)
		}
		return s + ", " + seconds(time.Duration(u.DurationMS)*time.Millisecond) + "\n"
	}
	var b strings.Builder
	b.WriteString("**Usage** (days and months in UTC; cost where the CLI reports it)\n")
	b.WriteString(line("This conversation", t.Conversation))
	b.WriteString(line("This conversation this month", t.ConversationMonth))
	b.WriteString(line("You today", t.UserToday))
	b.WriteString(line("You this month", t.UserMonth))
	b.WriteString(line("Everyone today", t.Today))
	b.WriteString(line("Everyone this month", t.Month))
	if lim := d.opts.Budgets; lim.DailyUSDPerUser > 0 || lim.MonthlyUSDPerConversation > 0 {
		if lim.DailyUSDPerUser > 0 {
			fmt.Fprintf(&b, "Budget: %s a day per user", dollars(lim.DailyUSDPerUser))
		}
		if lim.MonthlyUSDPerConversation > 0 {
			if lim.DailyUSDPerUser > 0 {
				b.WriteString(", ")
			} else {
				b.WriteString("Budget: ")
			}
			fmt.Fprintf(&b, "%s a month per conversation", dollars(lim.MonthlyUSDPerConversation))
		}
		if slices.Contains(lim.Exempt, userOf(m)) {
			b.WriteString(" (you are exempt)")
		}
		b.WriteString(".")
	}
	return strings.TrimRight(b.String(), "\n"), nil
}
