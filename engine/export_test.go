package engine

import "time"

// SetSteerGrace sets steerGrace for a test and returns the function that
// restores it.
func SetSteerGrace(d time.Duration) (restore func()) {
	old := steerGrace
	steerGrace = d
	return func() { steerGrace = old }
}

// The sandbox's handling of the CLIs' own state folders.
var (
	HandOnRollouts  = handOnRollouts
	GeminiProject   = geminiProject
	GeminiName      = geminiName
	OpenCodeState   = openCodeState
	OpenCodePrivate = openCodePrivate
)
