package engine

// ForgetSummaries empties the cache of session file summaries, as a fresh
// golem has it.
func ForgetSummaries() {
	summaries.mu.Lock()
	summaries.m = map[string]summary{}
	summaries.mu.Unlock()
}
