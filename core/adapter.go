package core

import (
	"context"
	"time"

	"github.com/golem-chat/golem/parser"
)

// MessageRef names one message on a platform. Channel is the chat, channel
// or DM it lives in; Thread is the thread (Slack thread_ts, Telegram forum
// topic, Discord thread channel) or empty; ID is the message's own id
// (Slack ts, Telegram message_id, Discord snowflake).
type MessageRef struct {
	Channel string
	Thread  string
	ID      string
}

// Attachment is a file the user sent, already saved by the adapter into the
// workspace inbox (see Inbox).
type Attachment struct {
	Name string // the original name, for display
	Path string // absolute path of the saved file
	Size int64
}

// Message is one incoming chat message, normalized by an adapter.
type Message struct {
	// EventID is the platform's id for this delivery, used to answer a
	// redelivered event once (Slack event_id, Telegram update_id, Discord
	// message or interaction id). Empty: no deduplication.
	EventID string

	Platform  string // "slack", "telegram", "discord", "http", "console"
	Workspace string // Slack team, Discord guild; empty where none
	Channel   string
	Thread    string // the thread or forum topic the message is in; empty if none
	ID        string // the message's own id (reply target)
	User      string // the sender's platform user id, as the allowlist names it
	UserName  string // for display only

	// Text is the message with the bot mention removed. A chat command is
	// normalized by the adapter to "/name args" (Slack "/golem stop",
	// Telegram "/stop@golem_bot" and Discord's /stop all become "/stop").
	Text        string
	Attachments []Attachment

	Mentioned bool // the bot was @-mentioned or replied to
	DM        bool // a direct message to the bot

	// Viewing is what the person has open beside the chat with the bot,
	// as the platform tells it (Slack's split view: "the channel #general
	// (C0123)"), or empty. The turn's prompt names it, as context.
	Viewing string

	// Sink, when set, receives the normalized events of what this message
	// causes instead of the reply streamer: a turn's events ending with its
	// terminal event; a command's answer as one text event then done; a
	// refusal, a full queue or a failure as one error event. The HTTP API
	// and the terminal chat render events themselves this way. Each call
	// carries one or more events, in order: a turn hands over at once what
	// the engine had ready (render them with one write). A turn's
	// permission requests come as permission_request events (with golem's
	// id, which Action.Data and /allow name) and their outcomes as
	// permission_decision events, which whoever decided sends: it may be
	// called from several goroutines at once (EventQueue.Push is safe so);
	// it must not block for long.
	Sink func(...parser.Event) `json:"-"`

	// Said is the chat context core read where the message came, from a
	// source that keeps it in memory (MemoryHistorian), for the replica
	// that runs the message. Sources leave it empty.
	Said []Said `json:",omitempty"`
	// SaidRead marks Said as read where the message came, even when it is
	// empty (nothing was said, or the read failed): the replica that runs
	// the message must not read its own memory instead, which holds
	// another replica's chat or later messages. Sources leave it false.
	SaidRead bool `json:",omitempty"`

	// arrived is when Handle queued the message, for the turn's metrics.
	arrived time.Time
	// mail is the message's id in its conversation's mailbox, with a
	// Cluster (see Cluster.Taken).
	mail string
	// strikeAtRecord: the mail is struck by the store in the write of the
	// turn's first record (strikesAtRecord), not yet by Cluster.Taken.
	strikeAtRecord bool
	// dedupe is the event id Cluster.Admit marks seen (see Dedupe).
	dedupe string
	// prompt is set on a message that stands for a Prompt (RunPrompt).
	prompt *prompted
}

// Ref is the message's own reference.
func (m Message) Ref() MessageRef { return MessageRef{Channel: m.Channel, Thread: m.Thread, ID: m.ID} }

// Limits are what the reply streamer must respect for one Poster.
type Limits struct {
	// MaxLen is the longest message, in the unit of the Poster's Measure.
	MaxLen int
	// MinEditInterval is the shortest time between two edits of one
	// message. Posters that share a budget across messages (Slack's
	// workspace-wide chat.update tier) also block in Edit; the streamer
	// coalesces meanwhile, so a slow Edit never builds a backlog.
	MinEditInterval time.Duration
	// MinPostInterval is the shortest time between two new messages in one
	// conversation (tool activity is batched to respect it).
	MinPostInterval time.Duration
	// MaxUpload is the largest file, in bytes, that an Uploader takes; a
	// bigger one is never handed to Upload and gets a note instead. Zero
	// for a Poster that is not an Uploader.
	MaxUpload int64
}

// Place is where an answer goes: the conversation's channel and thread, and
// the message it answers (adapters that reply by quoting, like Telegram,
// or that answer an interaction, like Discord, use ReplyTo).
type Place struct {
	Channel string
	Thread  string
	ReplyTo string
	// StartThread asks for the answer to open a thread on the ReplyTo
	// message when Thread is empty (session_scope: thread on Slack, where
	// each thread is its own session). Platforms without threads ignore it.
	StartThread bool
	// Continues marks a message that carries on an answer already posted
	// (a continuation past the length limit, a final text posted anew);
	// false for a new answer or a notice. Adapters with a shared flood
	// budget (Telegram) send new answers first.
	Continues bool
}

// Handler receives incoming messages.
//
// Handle returns at once, whatever the message causes: it never waits for a
// turn, another message or a platform call, so a Source may call it on the
// goroutine that reads its platform. It does only bounded local work first:
// the dispatcher writes the message's dedupe record (and a command's change
// to the store) before Handle returns, so that once it has returned a
// redelivery of the same EventID is dropped, even after a restart; a Source
// that confirms deliveries to its platform (Telegram's update offset) may
// confirm a message once Handle has returned for it. Answers are sent
// later: a turn's on its conversation's goroutine, the short ones (command
// output, refusals, "queue full") by the conversation's answers, in the
// order Handle was called for the conversation's messages; Dispatcher.Close
// waits for all of them. Messages of one conversation must be handed to
// Handle in the order they were sent; Handle may be called from many
// goroutines for different conversations. A message's Sink is called from
// Handle itself for a short answer, so it must not block.
type Handler interface {
	Handle(ctx context.Context, m Message)
	// HandleAction takes a click on a question's button. It decides at
	// once, without waiting for any platform, and returns what the clicker
	// should see, so that a source can answer the click within the
	// platform's deadline (Slack's and Discord's 3 s).
	HandleAction(ctx context.Context, a Action) ActionResult
}

// Gate is implemented by a Handler that can tell up front whether a
// message's sender may use the bot (the Dispatcher does). Sources ask it,
// through Admitted, before costly work for a message — downloading its
// files — so that a stranger's message costs a refusal and nothing more.
// Handle checks access again; a message handed on anyway is refused there.
type Gate interface {
	Admits(m Message) bool
}

// Admitted reports whether h would serve m's sender: true unless h is a
// Gate that says no.
func Admitted(h Handler, m Message) bool {
	g, ok := h.(Gate)
	return !ok || g.Admits(m)
}

// Source is where messages come from: one chat platform, the terminal, the
// HTTP API. Every Source is registered with the dispatcher; the answers to
// its messages go to the Poster it also is, or, for a Source that is not a
// Poster (the HTTP API), to each message's Sink.
type Source interface {
	// Platform is the source's name, the prefix of conversation keys and
	// of allowlist entries ("slack", "telegram", ...).
	Platform() string
	// Start connects and delivers messages to h until ctx is cancelled or
	// the connection fails for good. It returns nil after a clean stop.
	Start(ctx context.Context, h Handler) error
}

// Poster is a place that posts and edits messages: what the reply streamer
// and the dispatcher's short answers write to. Text given to Send, Edit and
// SendActivity is the agent's Markdown (or core's notices, also Markdown);
// the Poster renders its dialect, neutralizes mass and user mentions, and
// retries on rate limits itself (honouring Retry-After). Its methods are
// called concurrently for different conversations, and for one
// conversation from one goroutine at a time.
//
// Optional capabilities (LatestEditor, Drafter, Typist, PrivateReplier,
// Acknowledger, and the ones later features add) are separate one-method interfaces that core
// finds with a type assertion, so a new one needs no change to a Poster
// that does not offer it.
type Poster interface {
	Limits() Limits
	// Measure returns the length of markdown once rendered, in the unit
	// Limits.MaxLen counts (Telegram counts UTF-16 units of the visible
	// text after HTML entity parsing, Slack and Discord runes of their
	// dialect).
	Measure(markdown string) int
	// Send posts a new message and returns its reference.
	Send(ctx context.Context, to Place, text string) (MessageRef, error)
	// Edit replaces the text of a message posted by Send.
	Edit(ctx context.Context, msg MessageRef, text string) error
	// SendActivity posts tool activity under an answer: a reply in the
	// answer's thread (Slack), a reply to it (Telegram), a post in a thread
	// started on it (Discord).
	SendActivity(ctx context.Context, answer MessageRef, text string) error
}

// Adapter is a chat platform: a Source whose answers are posted back to it.
type Adapter interface {
	Source
	Poster
}

// LatestEditor is implemented by adapters whose edits wait for a budget
// shared beyond one message (Slack's workspace-wide chat.update tier).
// EditLatest waits for the budget first and only then calls latest for the
// text to send, so an edit that waited its turn carries what the agent has
// written by then, not what it had when the edit was asked for. latest may
// be called more than once (on a retry); the streamer uses it instead of
// Edit while an answer grows.
type LatestEditor interface {
	EditLatest(ctx context.Context, msg MessageRef, latest func() string) error
}

// Drafter is implemented by adapters that can show an answer as a live
// draft instead of a message that is edited (Telegram's sendMessageDraft
// in private chats). While the answer fits in one message the streamer
// calls Draft with the text so far, no more often than MinEditInterval,
// and posts tool activity as replies to the user's message; when the turn
// ends it posts the final text with Send. CanDraft says up front whether
// drafts apply at a place (turned on, a private chat), so that a turn
// whose first event is a tool call knows where its activity goes; an error
// from Draft still makes the streamer edit messages as usual for the rest
// of the turn.
type Drafter interface {
	CanDraft(to Place) bool
	Draft(ctx context.Context, to Place, text string) error
}

// Ender is implemented by posters whose answer messages stay open while
// they grow (Slack's streamed messages, chat.startStream … chat.stopStream):
// Send opens one, Edit and EditLatest grow it, and the streamer calls End
// for each message of the answer once its final text is delivered, so the
// platform shows it as complete. An Ender may hold back the final Edit
// of a message still open and deliver that text with End (Slack sends it
// with chat.stopStream, one call instead of two), so End must deliver it
// exactly or say why in its error, which is logged.
type Ender interface {
	End(ctx context.Context, msg MessageRef) error
}

// Step is one tool call of an answer as it runs, as a Stepper shows it.
type Step struct {
	// ID is the engine's id of the tool call; its result has the same.
	ID string
	// Name is the tool ("Bash", "Read"); Summary the argument a person
	// wants to see first ("go test ./..."), on one line, may be empty; Line
	// is the call as the activity reply shows it (ToolLine). All three are
	// set on the result's step too.
	Name, Summary, Line string
	// Done is set once the result came; Failed when it was an error.
	// Output is the result's text (the Stepper shortens it).
	Done, Failed bool
	Output       string

	warning bool // a warning's line, kept in its place among the steps; never handed to Step
}

// Stepper is implemented by posters that show what the agent is doing
// while it runs (Slack: the thread's status line, task cards inside the
// streamed answer). The streamer calls Step on its goroutine, in order,
// for each tool call when it starts and again when its result comes, once
// the answer has a message (answer). Step returns whether it showed the
// call inside the answer: if not, the call's activity line is posted as
// usual. It must not wait long (it may call the platform once or twice).
type Stepper interface {
	Step(ctx context.Context, answer MessageRef, s Step) (inAnswer bool)
}

// Typist is implemented by adapters that can show the bot is working (a
// typing action, a reaction on the incoming message). Typing is called when
// a turn starts and the returned stop func when it ends.
type Typist interface {
	Typing(ctx context.Context, on Message) (stop func())
}

// Acknowledger is implemented by posters that can mark a message as taken
// in without posting one of their own: a 👀 reaction on it (Slack
// reactions.add, Telegram setMessageReaction, Discord's reaction PUT).
// Core calls it for a message steered into the running answer (see Busy);
// where it is missing or returns an error (a Discord slash command has no
// message to react to), the message gets a short "(noted)" answer.
type Acknowledger interface {
	Acknowledge(ctx context.Context, m Message) error
}

// PrivateReplier is implemented by adapters that can answer privately (Discord's
// ephemeral interaction responses). The dispatcher uses it for refusals and
// command answers when present; otherwise it uses Send.
type PrivateReplier interface {
	ReplyPrivately(ctx context.Context, to Message, text string) error
}

// File is a file handed to the chat under an answer: what the agent left
// in outbox/, or a long /diff.
type File struct {
	// Name is what the chat shows: one path element, already made safe by
	// core (SafeFileName), never empty.
	Name string
	// Path is where the file is on golem's machine, for a note that names
	// it; an Uploader reads the bytes with Open, never moves them.
	Path string
	Size int64 // bytes; at most the Poster's Limits.MaxUpload

	// root and rel are, for a file the agent left, its working directory
	// and the file's path in it, which Open reads it through; id is the
	// file core listed, which Open must find there.
	root, rel string
	id        fileID
}

// Uploader is implemented by posters that can attach a file under an
// answer: in the answer's thread (Slack, Discord), as a reply to it
// (Telegram, which shows an image as a photo). Core calls it after the
// answer's final text, one file at a time, only for files within
// Limits.MaxUpload; a Poster without it gets a note naming the files.
type Uploader interface {
	Upload(ctx context.Context, answer MessageRef, f File) error
}

// Question is a permission request as an Asker shows it: what the agent
// wants to do, and one button per choice.
type Question struct {
	// ID is golem's id of the request, what `/allow ID` names.
	ID string
	// Answer is the answer message the question belongs under (posted in
	// its thread, or as a reply to it); when its ID is empty there is no
	// answer message yet and the question goes to Place.
	Answer MessageRef
	Place  Place
	// Text is Markdown: the tool and what it will do. Like every text a
	// Poster gets, the Poster neutralizes the mentions in it.
	Text    string
	Choices []Choice
}

// Choice is one button of a Question.
type Choice struct {
	Label string
	// Data comes back as Action.Data when the button is clicked; at most
	// 64 bytes (Telegram's callback_data), ASCII.
	Data string
	// Style hints how to show the button: "primary", "danger" or "".
	Style string
}

// Asker is implemented by posters that can show a question with buttons
// (Slack Block Kit, Telegram's inline keyboard, Discord components). A
// click comes back to the Handler as an Action. Posters without it get the
// question as a message that names `/allow ID` and `/deny ID`.
//
// Ask posts q and returns the question's message. Settle replaces the
// question's text by text and removes its buttons once it is decided; a
// question decided by a click is settled by the adapter itself with
// ActionResult.Settled when it answers the click, and core calls Settle
// for every other decision (a text command, a timeout, /stop, another
// platform, a restart).
type Asker interface {
	Ask(ctx context.Context, q Question) (MessageRef, error)
	Settle(ctx context.Context, question MessageRef, text string) error
}

// Action is a click on a question's button (or a decision from a client
// that shows its own buttons: the web page, the terminal), normalized by
// the source.
type Action struct {
	// EventID dedupes a redelivered click, like Message.EventID.
	EventID   string
	Platform  string
	Workspace string
	Channel   string // the conversation the question was asked in
	Thread    string
	User      string // the clicker's platform user id
	UserName  string // for display only
	// Question is the question's message; empty when the source has none.
	Question MessageRef
	// Data is the clicked Choice's Data.
	Data string
}

// ActionResult is what a source tells the one who clicked.
type ActionResult struct {
	// Settled is the question's new text when this click decided it (the
	// source updates the question to it and removes its buttons).
	Settled string
	// Refusal is said to the clicker alone when the click decided nothing
	// (someone who may not answer, a question already decided).
	Refusal string
	// Err is nil when the click decided the request; otherwise it wraps
	// ErrUnknownRequest, ErrDecided or ErrNotApprover.
	Err error
}

// ChannelNamer is implemented by posters that can tell a channel's name
// (Slack's conversations.info), which the operator's view shows beside
// the channel's id. ChannelName never waits for the platform: it returns
// the name it knows, "" while it asks (it learns it meanwhile) or when
// the platform does not tell. It is called concurrently.
type ChannelNamer interface {
	ChannelName(channel string) string
}
