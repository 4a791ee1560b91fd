package parser

// results is the buffer a parser returns a line's events in. It is reused
// from one Parse to the next (see Parser), so that parsing a line
// allocates no slice once the buffer has grown to the most events one
// line gives.
type results []Event

// start returns the buffer emptied, for a line's events to be appended
// to. The last line's events are cleared, so that the buffer keeps
// nothing of them alive.
func (r *results) start() []Event {
	clear(*r)
	*r = (*r)[:0]
	return *r
}

// keep remembers events (start's slice, appended to) for the next line
// and returns them; nil when there are none.
func (r *results) keep(events []Event) []Event {
	*r = events
	if len(events) == 0 {
		return nil
	}
	return events
}

// one returns e as the line's only event.
func (r *results) one(e Event) []Event { return r.keep(append(r.start(), e)) }
