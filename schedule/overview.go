package schedule

import (
	"fmt"
	"time"
)

// Overview is what bot doctor shows of the schedules.
type Overview struct {
	Count, Paused, Operator int
	// Next is the soonest run to come (zero: none), of schedule NextID.
	Next   time.Time
	NextID string
	Zone   *time.Location // Next's
}

// Overview reads every schedule and finds the next run after now.
func (b *Book) Overview(now time.Time) (Overview, error) {
	all, err := b.opts.Store.AllSchedules()
	if err != nil {
		return Overview{}, err
	}
	o := Overview{Count: len(all)}
	for _, sc := range all {
		if sc.Operator {
			o.Operator++
		}
		if sc.Paused {
			o.Paused++
			continue
		}
		e, err := b.entryOf(sc)
		if err != nil || e.next.IsZero() {
			continue
		}
		next := e.next
		if next.Before(now) {
			next = now // due: the loop runs it now (or skips it, past catch_up)
		}
		if o.Next.IsZero() || next.Before(o.Next) {
			o.Next, o.NextID, o.Zone = next, sc.ID, e.spec.Loc
		}
	}
	return o, nil
}

// String says o in one line.
func (o Overview) String() string {
	if o.Count == 0 {
		return "no schedules"
	}
	s := fmt.Sprintf("%d schedules (%d paused, %d from bot.yaml)", o.Count, o.Paused, o.Operator)
	if !o.Next.IsZero() {
		s += fmt.Sprintf("; next run %s %s (`%s`)", o.Next.In(o.Zone).Format("Mon 2 Jan 2006 15:04"), o.Zone, o.NextID)
	}
	return s
}
