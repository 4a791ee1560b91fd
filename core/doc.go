// Package core routes chat messages to coding agents and streams their
// answers back. It knows no chat SDK and no CLI flag: platforms reach it
// through the small interfaces in adapter.go, agents through engine.Engine.
//
// A message travels in one direction:
//
//	Source.Start ─▶ Dispatcher.Handle ─▶ conversation queue ─▶ engine run
//	                                                               │ events
//	Poster.Send/Edit/SendActivity ◀── Reply (one per turn) ◀───────┘
//
// On the way:
//
//   - A Source (a chat platform, the terminal, the HTTP API) delivers
//     normalized Messages to a Handler, the Dispatcher.
//   - The Dispatcher deduplicates redelivered events, checks access
//     (Options.Allow, and Options.Trusted for the platforms the wiring
//     trusts), answers chat commands (/new, /stop, /status, ...), and
//     queues turns per conversation: one turn at a time per conversation
//     (a Key), conversations in parallel up to Options.MaxConcurrent.
//   - A turn runs the conversation's engine with its stored session id and
//     saves the new one; a turn cut short by a restart is recorded in the
//     store and told "interrupted" when its platform comes back.
//   - A Reply renders the turn's events on the Poster the message came
//     from: the first text at once, coalesced edits within Limits, split
//     messages that keep code fences intact, tool activity in the answer's
//     thread, and always the exact final text. A Message with a Sink (the
//     HTTP API, the terminal) takes the raw events instead.
//
// A message that comes while its conversation's answer runs is steered
// into it, interrupts it or waits behind it (Options.Busy): steered, it is
// written to the running agent (engine.Run.Steer) and acknowledged in the
// chat, and one the run can no longer take queues for a turn of its own.
//
// What core holds of a conversation in memory — its waiting messages, its
// running turn, what is being steered into it — is one unit
// (conversation.go) under a lock of its own, so that a conversation can
// change hands as one thing; what lasts is in the store.
//
// Optional capabilities of a Poster (LatestEditor, Drafter, Typist,
// PrivateReplier, Acknowledger) are one-method interfaces found by type
// assertion.
//
// The vocabulary of a turn's events and outcomes is parser's (parser.Event,
// parser.Type, parser.Reason), not core's own. It stays there on purpose:
// the parsers make those events from each CLI's lines, the engines add the
// few of their own (a warning, a resume reset) and the HTTP API and the
// terminal send them as they are (a Sink takes parser.Events), so one type
// is shared from the CLI's stdout to the client's stream with no copy and
// no mapping between two vocabularies that would drift. parser imports
// nothing of golem; core, engine and the sources depend on it, never the
// other way round. Why a permission request ended is the store's record
// (store.ApprovalEnd), for the same reason.
package core
