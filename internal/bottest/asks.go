package bottest

// AskWrite is the fake agent's script for a Write that needs permission,
// then the answer "written" once allowed.
const AskWrite = "!ask Write {\"file_path\":\"a.txt\",\"content\":\"x\"}\nwritten"

// Ask is one way the fake agent asks, in the tests that every surface
// shows events in the agent's order around a question.
type Ask struct {
	Name, Script string
	// Shown is what the answer reads when the question comes: the
	// agent's text, or golem's placeholder when it said nothing yet.
	Shown string
}

// Asks are the agent asking right after its first text ("!text 40", the
// fake's "the quick brown fox…") and before any text.
var Asks = []Ask{
	{"after its first text", "!text 40\n" + AskWrite, "the quick"},
	{"before any text", AskWrite, "working"},
}
