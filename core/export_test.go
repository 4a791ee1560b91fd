package core

// OnRequeue has f told of the activity lines r puts back to wait for the
// post interval, once they are back: a test waits on the pump instead of
// sleeping.
func OnRequeue(r *Reply, f func(lines []string)) {
	r.mu.Lock()
	r.requeued = f
	r.mu.Unlock()
}
