package slack

import (
	"context"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/golem-chat/golem/core"
)

// threadStatus is the status line golem set in a thread
// (assistant.threads.setStatus), which Slack shows under the thread until
// a message is posted there, golem clears it, or two minutes pass.
type threadStatus struct {
	// pending, while the first call setting text is under way, is closed
	// when it is done.
	pending chan struct{}
	text    string
	running bool // a tool runs: the line is set again every StatusRefresh
	// thinking marks the line thinking set before the answer shows,
	// which the stream's start clears.
	thinking bool
	gen      int         // counts the lines set, so that an old refresh stops
	timer    *time.Timer // the next refresh, while running
}

// statusLine is what the thread's status says while a tool runs: "is
// running `go test ./...`" (Slack puts the bot's name before it).
func statusLine(s core.Step) string {
	verb := "is using " + s.Name
	switch strings.ToLower(s.Name) {
	case "bash", "shell", "sh", "run_shell_command", "exec", "exec_command", "local_shell":
		verb = "is running"
	case "read", "readfile", "view", "read_file":
		verb = "is reading"
	case "edit", "write", "multiedit", "notebookedit", "editfile", "writefile", "write_file", "replace":
		verb = "is editing"
	case "glob", "grep", "search", "ls", "list", "find", "codebasesearch", "search_file_content":
		verb = "is searching"
	case "webfetch", "websearch", "fetch", "web_fetch", "google_web_search":
		verb = "is looking up"
	}
	if s.Summary == "" {
		if strings.HasPrefix(verb, "is using") {
			return verb
		}
		return verb + " " + s.Name
	}
	return verb + " `" + s.Summary + "`"
}

// setStatus shows text as the status of thread in channel now and, while
// the tool runs (until toolDone or clearStatus), sets it again every
// StatusRefresh so that Slack's two-minute clear never shows an idle
// thread during a long tool call. ctx bounds the refreshes too.
func (a *Adapter) setStatus(ctx context.Context, channel, thread, text string) {
	key := streamKey(channel, thread)
	a.mu.Lock()
	st := a.statuses.get(key)
	if st == nil {
		st = &threadStatus{}
		a.statuses.put(key, st)
	}
	if st.timer != nil {
		st.timer.Stop()
	}
	st.text, st.running, st.thinking = text, true, false
	st.gen++
	gen := st.gen
	a.mu.Unlock()
	a.callStatus(ctx, channel, thread, text)
	a.refreshLater(ctx, channel, thread, gen)
}

// refreshLater arms the next refresh of the status line numbered gen.
func (a *Adapter) refreshLater(ctx context.Context, channel, thread string, gen int) {
	key := streamKey(channel, thread)
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.statuses.get(key)
	if st == nil || st.gen != gen || !st.running || ctx.Err() != nil {
		return
	}
	st.timer = time.AfterFunc(a.opts.StatusRefresh, func() {
		a.mu.Lock()
		st := a.statuses.get(key)
		live := st != nil && st.gen == gen && st.running
		var text string
		if live {
			text = st.text
		}
		a.mu.Unlock()
		if !live || ctx.Err() != nil {
			return
		}
		a.callStatus(ctx, channel, thread, text)
		a.refreshLater(ctx, channel, thread, gen)
	})
}

// toolDone stops refreshing thread's status: the tool it named has ended
// (the line lapses, or the next tool's replaces it, or the answer's end
// clears it).
func (a *Adapter) toolDone(channel, thread string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st := a.statuses.get(streamKey(channel, thread)); st != nil {
		st.running = false
		if st.timer != nil {
			st.timer.Stop()
		}
	}
}

// keepStatus sets thread's status again after golem posted there (Slack
// clears a status when a message is posted in its thread), while a tool
// still runs.
func (a *Adapter) keepStatus(ctx context.Context, channel, thread string) {
	a.mu.Lock()
	st := a.statuses.get(streamKey(channel, thread))
	running := st != nil && st.running
	var text string
	if running {
		text = st.text
	}
	a.mu.Unlock()
	if running {
		a.callStatus(ctx, channel, thread, text)
	}
}

// clearStatus clears the status golem set in thread, if any (status ""),
// when the answer there ends.
func (a *Adapter) clearStatus(ctx context.Context, channel, thread string) {
	key := streamKey(channel, thread)
	a.mu.Lock()
	st := a.statuses.get(key)
	a.statuses.del(key)
	if st != nil && st.timer != nil {
		st.timer.Stop()
	}
	a.mu.Unlock()
	if st != nil {
		a.callStatus(ctx, channel, thread, "")
	}
}

// callStatus calls assistant.threads.setStatus within its budget. A
// status is a courtesy: a failure is logged and costs nothing else.
func (a *Adapter) callStatus(ctx context.Context, channel, thread, text string) {
	if err := a.statusCalls.wait(ctx); err != nil {
		return
	}
	err := a.do(ctx, "assistant.threads.setStatus", func(ctx context.Context) error {
		return a.api.SetAssistantThreadsStatusContext(ctx, slackapi.AssistantThreadsSetStatusParameters{
			ChannelID: channel, ThreadTS: thread, Status: text})
	})
	if err != nil {
		a.log.Debug("slack: set a thread's status", "channel", channel, "err", withScopeHint(err))
	}
}

// thinkingStatus is the thread's status before the answer shows.
const thinkingStatus = "is thinking…"

// thinking, with streaming native, is the working indicator of a turn
// whose answer will stream: it takes the stream's start now (Tier 2; see
// startStream) and shows "is thinking…" as the status of the thread the
// answer streams in, instead of the hourglass on the message; Slack
// clears the status when the stream starts, and the returned stop clears
// what is left. Neither waits for Slack. It reports false when the answer
// will be posted and edited (no start free now, or Slack refused this
// answer's stream): that turn gets the hourglass.
func (a *Adapter) thinking(ctx context.Context, on core.Message) (func(), bool) {
	if a.opts.Streaming != StreamNative {
		return nil, false
	}
	key := streamKey(on.Channel, on.ID)
	a.mu.Lock()
	refused := a.refused.get(key)
	a.mu.Unlock()
	if refused {
		return nil, false
	}
	if !a.streamStarts.take() {
		a.log.Debug("slack: no stream start free; this answer is posted and edited", "channel", on.Channel)
		a.refuse(key)
		return nil, false
	}
	thread := on.Thread
	if thread == "" {
		thread = on.ID
	}
	skey := streamKey(on.Channel, thread)
	done := make(chan struct{})
	a.mu.Lock()
	a.reserved.put(key, true)
	gen := 1
	if st := a.statuses.get(skey); st != nil {
		gen = st.gen + 1
		if st.timer != nil {
			st.timer.Stop()
		}
	}
	a.statuses.put(skey, &threadStatus{pending: done, text: thinkingStatus, running: true, thinking: true, gen: gen})
	a.mu.Unlock()
	bg := context.WithoutCancel(ctx)
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(bg, 30*time.Second)
		defer cancel()
		a.callStatus(ctx, on.Channel, thread, thinkingStatus)
		a.mu.Lock()
		st := a.statuses.get(skey)
		late := st == nil || st.gen != gen // the stream started meanwhile, or a tool's line came
		a.mu.Unlock()
		if late && st == nil {
			a.callStatus(ctx, on.Channel, thread, "") // the start may have come first
			return
		}
		a.refreshLater(bg, on.Channel, thread, gen)
	}()
	return func() {
		go func() {
			ctx, cancel := context.WithTimeout(bg, 30*time.Second)
			defer cancel()
			a.awaitStatus(ctx, on.Channel, thread)
			a.clearStatus(ctx, on.Channel, thread)
		}()
	}, true
}

// awaitStatus waits until the thinking status call under way in thread,
// if any, is done.
func (a *Adapter) awaitStatus(ctx context.Context, channel, thread string) {
	a.mu.Lock()
	var pending chan struct{}
	if st := a.statuses.get(streamKey(channel, thread)); st != nil {
		pending = st.pending
	}
	a.mu.Unlock()
	if pending != nil {
		select {
		case <-pending:
		case <-ctx.Done():
		}
	}
}

// statusCleared forgets thread's status: a stream started there, which
// clears it on Slack.
func (a *Adapter) statusCleared(channel, thread string) {
	key := streamKey(channel, thread)
	a.mu.Lock()
	defer a.mu.Unlock()
	if st := a.statuses.get(key); st != nil && (st.thinking || !st.running) {
		if st.timer != nil {
			st.timer.Stop()
		}
		a.statuses.del(key)
	}
}

// assistantThread is a thread of the app's split view (Agents & AI Apps):
// the channel the person has open beside it, and whether its title is set.
type assistantThread struct {
	viewing string
	titled  bool
}

// onAssistantThread takes assistant_thread_started (started) and
// assistant_thread_context_changed: it remembers the channel the person
// has open beside the thread and, as the thread opens, sets the
// configured suggested prompts. Called on Start's goroutine; the call to
// Slack runs on its own.
func (a *Adapter) onAssistantThread(ctx context.Context, t slackevents.AssistantThread, started bool) {
	if t.ChannelID == "" || t.ThreadTimeStamp == "" {
		return
	}
	key := streamKey(t.ChannelID, t.ThreadTimeStamp)
	a.mu.Lock()
	th := a.threads.get(key)
	if th == nil {
		th = &assistantThread{}
		a.threads.put(key, th)
	}
	th.viewing = t.Context.ChannelID
	a.mu.Unlock()
	a.log.Debug("slack: split view", "started", started, "channel", t.ChannelID, "viewing", t.Context.ChannelID)
	if th.viewing != "" {
		a.ChannelName(th.viewing) // learnt meanwhile, for the prompt
	}
	if !started || len(a.opts.SuggestedPrompts) == 0 {
		return
	}
	params := slackapi.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: t.ChannelID, ThreadTS: t.ThreadTimeStamp}
	for _, p := range a.opts.SuggestedPrompts {
		params.AddPrompt(p.Title, p.Message)
	}
	go func() {
		err := a.do(ctx, "assistant.threads.setSuggestedPrompts", func(ctx context.Context) error {
			return a.api.SetAssistantThreadsSuggestedPromptsContext(ctx, params)
		})
		if err != nil {
			a.log.Warn("slack: set the split view's suggested prompts", "channel", t.ChannelID, "err", withScopeHint(err))
		}
	}()
}

// maxTitle bounds a split-view thread's title, taken from its first
// prompt.
const maxTitle = 80

// inAssistantThread completes a direct message sent in a thread of the
// split view: Viewing names the channel the person has open beside it,
// and the thread's first message becomes its title (set on a goroutine of
// its own: Start's must not wait).
func (a *Adapter) inAssistantThread(ctx context.Context, m *core.Message) {
	if !m.DM || m.Thread == "" {
		return
	}
	a.mu.Lock()
	th := a.threads.get(streamKey(m.Channel, m.Thread))
	var viewing string
	title := false
	if th != nil {
		viewing = th.viewing
		title = !th.titled && !strings.HasPrefix(m.Text, "/")
		th.titled = th.titled || title
	}
	a.mu.Unlock()
	if th == nil {
		return
	}
	if viewing != "" && !isDMChannel(viewing) {
		m.Viewing = "the channel " + viewing
		if name := a.ChannelName(viewing); name != "" {
			m.Viewing = "the channel #" + name + " (" + viewing + ")"
		}
	}
	if text := strings.Join(strings.Fields(m.Text), " "); title && text != "" {
		params := slackapi.AssistantThreadsSetTitleParameters{ChannelID: m.Channel, ThreadTS: m.Thread, Title: cutRunes(text, maxTitle)}
		channel := m.Channel
		go func() {
			err := a.do(ctx, "assistant.threads.setTitle", func(ctx context.Context) error {
				return a.api.SetAssistantThreadsTitleContext(ctx, params)
			})
			if err != nil {
				a.log.Warn("slack: set the split view thread's title", "channel", channel, "err", withScopeHint(err))
			}
		}()
	}
}
