package engine

// ForgetSummaries empties the cache of session file summaries, as a fresh
// golem has it.
func ForgetSummaries() {
	summaries.mu.Lock()
	summaries.m = map[string]summary{}
	summaries.mu.Unlock()
}

// SetOpenCodeOutputMax sets the most of the OpenCode CLI's output a
// listing takes in until the test ends.
func SetOpenCodeOutputMax(t interface{ Cleanup(func()) }, n int) {
	old := openCodeOutputMax
	openCodeOutputMax = n
	t.Cleanup(func() { openCodeOutputMax = old })
}
