package schedule

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/store"
	"github.com/jonboulle/clockwork"
)

// Defaults of Options.
const (
	DefaultCatchUp  = time.Hour
	DefaultBusyWait = time.Minute
	DefaultMax      = 20
	DefaultResync   = 10 * time.Second
)

// MaxFailures is how many failed runs in a row pause a schedule.
const MaxFailures = 5

// changedKey is the store.State key that every change to the schedules
// rewrites, so that the loop, on whichever replica it runs, rereads them
// when it differs (one small read per Resync instead of all schedules).
const changedKey = "schedules.changed"

// Runner is where runs go: core's Dispatcher.
type Runner interface {
	// RunPrompt runs p as a turn of its conversation and returns how it
	// ended (see core.Prompt).
	RunPrompt(ctx context.Context, p core.Prompt) string
	// Notify posts a short note where p's answer would go.
	Notify(p core.Prompt, text string)
}

// Options configure a Book; the zero values are the defaults.
type Options struct {
	Store store.Store
	// Runner runs the schedules' prompts; set it with Bind when it is
	// made after the Book (the Dispatcher takes the Book).
	Runner      Runner
	Clock       clockwork.Clock // nil is the real clock
	Zone        *time.Location  // schedules.timezone; nil is UTC
	MinInterval time.Duration   // the shortest @every; default MinInterval
	Session     string          // SessionFresh (default) or SessionContinue
	BusyWait    time.Duration   // how long a run waits for a busy conversation; negative: not at all
	CatchUp     time.Duration   // a run missed this recently fires at start; negative: never (a minute late is still on time)
	Max         int             // schedules per conversation
	// Resync is how often the loop looks whether another replica changed
	// the schedules.
	Resync time.Duration
	Logger *slog.Logger
	// Counted is told each run's outcome, for golem_schedule_runs_total.
	Counted func(outcome string)
	// Fires picks the schedules this Book's loop fires; nil: all. `bot
	// serve` leaves the terminal's to `bot run`, which fires only its
	// conversation's, so that a terminal's schedule waits, as a missed
	// run, for the terminal to be open again.
	Fires func(sc store.Schedule) bool
}

// Book is golem's schedules: it answers the chat's schedule commands
// (Command, core.Scheduler), keeps the schedules in the store, and fires
// them (Run). Its methods are safe for concurrent use.
type Book struct {
	opts  Options
	clock clockwork.Clock
	log   *slog.Logger

	wake chan struct{} // a change here: the loop rereads every schedule

	mu     sync.Mutex
	runner Runner
	dirty  map[string]bool // schedules whose run ended: the loop rereads them
	stale  chan struct{}   // dirty has ids
	runs   sync.WaitGroup
}

var _ core.Scheduler = (*Book)(nil)

// New returns a Book over opts.Store.
func New(opts Options) *Book {
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
	}
	if opts.Zone == nil {
		opts.Zone = time.UTC
	}
	if opts.MinInterval <= 0 {
		opts.MinInterval = MinInterval
	}
	if opts.Session == "" {
		opts.Session = SessionFresh
	}
	switch {
	case opts.BusyWait == 0:
		opts.BusyWait = DefaultBusyWait
	case opts.BusyWait < 0:
		opts.BusyWait = 0 // skipped at once
	}
	if opts.CatchUp == 0 {
		opts.CatchUp = DefaultCatchUp
	}
	if opts.Max <= 0 {
		opts.Max = DefaultMax
	}
	if opts.Resync <= 0 {
		opts.Resync = DefaultResync
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Counted == nil {
		opts.Counted = func(string) {}
	}
	if opts.Fires == nil {
		opts.Fires = func(store.Schedule) bool { return true }
	}
	return &Book{opts: opts, clock: opts.Clock, log: opts.Logger, runner: opts.Runner,
		wake: make(chan struct{}, 1), stale: make(chan struct{}, 1), dirty: map[string]bool{}}
}

// Bind gives the Book its Runner, before Run.
func (b *Book) Bind(r Runner) {
	b.mu.Lock()
	b.runner = r
	b.mu.Unlock()
}

func (b *Book) run() Runner {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.runner
}

// changed tells the loops of every replica that the schedules changed:
// this one at once, the others at their next Resync.
func (b *Book) changed() {
	if err := b.opts.Store.Save(changedKey, []byte(newID(8))); err != nil {
		b.log.Warn("schedules: mark a change for the other replicas", "err", err)
	}
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// reread asks the loop to read the schedule id again.
func (b *Book) reread(id string) {
	b.mu.Lock()
	b.dirty[id] = true
	b.mu.Unlock()
	select {
	case b.stale <- struct{}{}:
	default:
	}
}

// zone is the time zone of sc.
func (b *Book) zone(sc store.Schedule) (*time.Location, error) {
	if sc.TZ == "" {
		return b.opts.Zone, nil
	}
	return LoadZone(sc.TZ)
}

// specOf is when sc runs.
func (b *Book) specOf(sc store.Schedule) (Spec, error) {
	loc, err := b.zone(sc)
	if err != nil {
		return Spec{}, err
	}
	if sc.Spec == "" {
		return Once(sc.At, loc), nil
	}
	return ParseSpec(sc.Spec, loc, 0) // its interval was checked when it was set
}

// prompt is a run of sc, as core takes it.
func (b *Book) prompt(sc store.Schedule, header string) core.Prompt {
	fresh := b.opts.Session == SessionFresh
	if sc.Continue {
		fresh = false
	}
	return core.Prompt{Platform: sc.Platform, Workspace: sc.Workspace, Channel: sc.Channel, Thread: sc.Thread,
		User: sc.User, UserName: sc.UserName, Operator: sc.Operator && sc.User == "", Text: sc.Prompt, Header: header, Schedule: sc.ID,
		Fresh: fresh, BusyWait: b.opts.BusyWait}
}

// name is what sc is called on its answers.
func name(sc store.Schedule) string {
	if sc.Name != "" {
		return sc.Name
	}
	return sc.ID
}

func newID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
