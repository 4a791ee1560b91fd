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
// Optional capabilities of a Poster (LatestEditor, Drafter, Typist,
// PrivateReplier, Acknowledger) are one-method interfaces found by type
// assertion.
package core
