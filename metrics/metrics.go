// Package metrics is golem's Prometheus instrumentation, served at GET
// /metrics by the HTTP API in the text format:
//
//	golem_turns_total{engine,platform,outcome}     turns by how they ended: done, error, stopped, timed_out, interrupted
//	golem_turn_duration_seconds{engine,platform}   from the message's arrival to the turn's end
//	golem_first_text_seconds{engine,platform}      from the message's arrival to the answer's first text
//	golem_turns_running                            turns holding a slot of max_concurrent
//	golem_queue_waiting                            messages waiting for their conversation or a slot
//	golem_platform_calls_total{platform,method}    every attempt of a platform API call
//	golem_platform_rate_limited_total{platform,method}  attempts the platform answered with a rate limit
//	golem_approvals_total{decision,reason}         permission requests decided: allow, allow_session, deny; answered, timed_out, stopped, ...
//	golem_engine_failures_total{engine,kind}       CLI failures: not_installed, start, crashed, cli_error
//	golem_busy_messages_total{platform,engine,handling}  messages that came while their answer ran: steered, interrupted, queued
//	golem_schedule_runs_total{outcome}             scheduled prompts' runs: done, error, skipped_busy, denied, over_budget, missed, ...
//
// plus the Go runtime's and the process's own (go_*, process_*).
//
// Labels hold fixed names only (an engine's config name, a platform, a
// method, an outcome): never a message's text, a user's name or id, a
// channel or a token, so their number stays small whatever the chats do.
//
// A Registry implements core.Meter (turns, engine failures, approvals,
// busy messages) and
// retry.Observer (platform calls); core and the adapters know only those
// small interfaces, so that neither imports Prometheus.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/retry"
)

// Registry holds golem's metrics. Its methods are safe for concurrent use.
type Registry struct {
	reg           *prometheus.Registry
	with          prometheus.Registerer // reg, adding the replica label to every metric of golem's
	turns         *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	firstText     *prometheus.HistogramVec
	calls         *prometheus.CounterVec
	rateLimited   *prometheus.CounterVec
	approvals     *prometheus.CounterVec
	engineFailure *prometheus.CounterVec
	busy          *prometheus.CounterVec
	scheduleRuns  *prometheus.CounterVec
}

var (
	_ core.Meter     = (*Registry)(nil)
	_ retry.Observer = (*Registry)(nil)
)

// New returns a Registry of its own (not Prometheus's global one), with
// the Go runtime's and the process's collectors.
func New() *Registry { return NewFor("") }

// NewFor is New for one replica among several: every metric carries
// replica="NAME" ("" adds no label: a golem alone).
func NewFor(replica string) *Registry {
	reg := prometheus.NewRegistry()
	var with prometheus.Registerer = reg
	if replica != "" {
		with = prometheus.WrapRegistererWith(prometheus.Labels{"replica": replica}, reg)
	}
	r := &Registry{
		reg:  reg,
		with: with,
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "golem_turns_total", Help: "Turns by engine, platform and how they ended (done, error, stopped, timed_out, interrupted).",
		}, []string{"engine", "platform", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "golem_turn_duration_seconds", Help: "Time from a message's arrival to the end of its turn.",
			Buckets: []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200},
		}, []string{"engine", "platform"}),
		firstText: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "golem_first_text_seconds", Help: "Time from a message's arrival to the first visible text of its answer.",
			Buckets: []float64{0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120},
		}, []string{"engine", "platform"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "golem_platform_calls_total", Help: "Platform API call attempts by platform and method.",
		}, []string{"platform", "method"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "golem_platform_rate_limited_total", Help: "Platform API attempts answered with a rate limit, by platform and method.",
		}, []string{"platform", "method"}),
		approvals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "golem_approvals_total", Help: "Permission requests decided, by decision and why they ended.",
		}, []string{"decision", "reason"}),
		engineFailure: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "golem_engine_failures_total", Help: "Engine CLI failures by engine and kind (not_installed, start, crashed, cli_error).",
		}, []string{"engine", "kind"}),
		busy: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "golem_busy_messages_total", Help: "Messages that came while their conversation's answer ran, by what was done: steered, interrupted, queued (the engine cannot steer).",
		}, []string{"platform", "engine", "handling"}),
		scheduleRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "golem_schedule_runs_total", Help: "Scheduled prompts' runs by how they ended: done, error, timed_out, stopped, skipped_busy, denied, over_budget, missed, shutdown, started, unreachable, handed_over.",
		}, []string{"outcome"}),
	}
	r.with.MustRegister(r.turns, r.duration, r.firstText, r.calls, r.rateLimited, r.approvals, r.engineFailure, r.busy, r.scheduleRuns,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Watch adds the gauges of d's load, read at each scrape:
// golem_turns_running and golem_queue_waiting. Call it once.
func (r *Registry) Watch(d *core.Dispatcher) {
	r.with.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "golem_turns_running", Help: "Turns running now."},
			func() float64 { running, _ := d.Load(); return float64(running) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "golem_queue_waiting", Help: "Messages waiting for their conversation's turn or a free slot."},
			func() float64 { _, waiting := d.Load(); return float64(waiting) }),
	)
}

// WatchReplica adds what a replica among several shares: how many
// conversations it owns, and whether it leads each of roles.
func (r *Registry) WatchReplica(owned func() int, leading func(role string) bool, roles []string) {
	r.with.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "golem_conversations_owned",
		Help: "Conversations this replica owns now (runs or has just run)."}, func() float64 { return float64(owned()) }))
	for _, role := range roles {
		r.with.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "golem_leader",
			Help:        "1 while this replica leads the role (the Telegram poller, the Discord gateway, the schedule loop, worktree cleanup).",
			ConstLabels: prometheus.Labels{"role": role}}, func() float64 {
			if leading(role) {
				return 1
			}
			return 0
		}))
	}
}

// Handler serves the metrics in Prometheus's text format.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{})
}

// TurnEnded implements core.Meter.
func (r *Registry) TurnEnded(t core.TurnStats) {
	r.turns.WithLabelValues(t.Engine, t.Platform, t.Outcome).Inc()
	r.duration.WithLabelValues(t.Engine, t.Platform).Observe(t.Duration.Seconds())
	if t.FirstText > 0 {
		r.firstText.WithLabelValues(t.Engine, t.Platform).Observe(t.FirstText.Seconds())
	}
}

// EngineFailed implements core.Meter.
func (r *Registry) EngineFailed(engine, kind string) {
	r.engineFailure.WithLabelValues(engine, kind).Inc()
}

// Approval implements core.Meter.
func (r *Registry) Approval(decision, reason string) {
	r.approvals.WithLabelValues(decision, reason).Inc()
}

// BusyMessage implements core.Meter.
func (r *Registry) BusyMessage(platform, engine, handling string) {
	r.busy.WithLabelValues(platform, engine, handling).Inc()
}

// ScheduleRun counts a scheduled prompt's run by its outcome (the schedule
// loop's Options.Counted).
func (r *Registry) ScheduleRun(outcome string) { r.scheduleRuns.WithLabelValues(outcome).Inc() }

// Called implements retry.Observer.
func (r *Registry) Called(platform, method string) { r.calls.WithLabelValues(platform, method).Inc() }

// RateLimited implements retry.Observer.
func (r *Registry) RateLimited(platform, method string) {
	r.rateLimited.WithLabelValues(platform, method).Inc()
}
