// Package httpapi is golem's local HTTP adapter: a JSON API that answers
// with Server-Sent Events and a small embedded web chat page that uses it.
//
//	POST /v1/chat  {"conversation":"ID","text":"..."} with Content-Type
//	               application/json → text/event-stream, one
//	               "data: <event JSON>" frame per normalized event, ending
//	               after the terminal event (done or error); refusals are
//	               4xx with {"error":"..."}
//	GET  /v1/files/ID → the bytes of a file a "file" event offered (kept
//	               FileTTL)
//	GET  /v1/conversations[/{key}[/events|/diff]], POST
//	               /v1/conversations/{key}/stop|new → the operator's
//	               view, with Options.Operator (see operator.go); GET
//	               /admin is its page
//	GET  /healthz  → 200 "ok"; 503 while Options.Healthy says no (a replica
//	               without its etcd)
//	GET  /metrics  → Prometheus's text format, when Options.Metrics is set;
//	               guarded like /v1
//	GET  /         → the web chat page
//
// The agent runs with full permissions on the host, so the API is guarded:
// New refuses a non-loopback listen address without a token; with a token
// every /v1 call needs "Authorization: Bearer <token>"; without one, /v1
// answers only requests addressed to a loopback host name (no DNS
// rebinding) and only JSON bodies from the page's own origin (no
// cross-site form posts).
package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/store"
)

// Defaults for Options and the server's fixed timeouts.
const (
	DefaultMaxBody = 1 << 20 // bytes of a request body

	readHeaderTimeout = 10 * time.Second
	bodyReadTimeout   = 30 * time.Second
	writeTimeout      = 30 * time.Second // per write of a stream, not per stream
	idleTimeout       = 2 * time.Minute
	heartbeatInterval = 15 * time.Second
	shutdownGrace     = 10 * time.Second
)

// ErrInsecureListen is returned by New for a listen address that other
// machines can reach when no token is configured.
var ErrInsecureListen = errors.New("httpapi: refusing to listen on a non-loopback address without a token")

// Options configure a Server.
type Options struct {
	// Listen is the TCP address to serve on, e.g. "127.0.0.1:8080".
	// Ignored when Listener is set.
	Listen string
	// Listener, when set, is served instead of listening on Listen (a test's
	// 127.0.0.1:0 listener, an inherited socket). Start closes it.
	Listener net.Listener
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every /v1 call. It is required for a non-loopback address.
	Token string
	// MaxBody bounds a request body in bytes; default DefaultMaxBody.
	MaxBody int64
	// ShutdownGrace is how long Start waits, once its context is done, for
	// open streams to end before closing them; default 10s.
	ShutdownGrace time.Duration
	Logger        *slog.Logger
	// Metrics, when set, is served at GET /metrics behind the same guard
	// as the API (the token, or a loopback host without one).
	Metrics http.Handler
	// Healthy, when set, is asked by GET /healthz: false answers 503 (a
	// replica that lost etcd starts no turn until it is back).
	Healthy func() (ok bool, why string)
	// Operator and Store, when both set, serve the operator's view:
	// /v1/conversations and the /admin page (see operator.go).
	Operator Operator
	Store    store.Store
	// Doctor, when set, runs `bot doctor`'s checks for the operator's
	// page (GET /v1/doctor).
	Doctor func(ctx context.Context) []DoctorLine
	// Replica is this replica's name with several ("" alone): an action
	// on a conversation another replica runs is refused with its name.
	Replica string
	// FilesDir keeps the files that file events offer at /v1/files/ID, so
	// that their URLs outlive a restart; "" keeps them in a temporary
	// folder removed when the server stops.
	FilesDir string
}

// Server is the HTTP adapter: a core.Source with platform "http". It is
// not a core.Poster: replies to its messages go to the requests' event
// streams through each message's Sink.
type Server struct {
	opts      Options
	log       *slog.Logger
	tokenHash [sha256.Size]byte
	page      []byte // index.html with the auth flag filled in
	admin     []byte // admin.html so, with the operator's view
	seq       atomic.Uint64
	streams   openStreams   // open /v1/chat streams; Start waits for them
	heartbeat time.Duration // between keep-alive comments of a quiet stream
	files     *fileStore    // what file events offer at /v1/files/ID
	audit     *auditLog     // the operator's actions, with Options.Store
}

var _ core.Source = (*Server)(nil)

// New validates opts and returns a server; nothing listens until Start.
// It fails with ErrInsecureListen for a non-loopback address (including
// ":8080", every interface) when opts.Token is empty.
func New(opts Options) (*Server, error) {
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = shutdownGrace
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	addr := opts.Listen
	if opts.Listener != nil {
		addr = opts.Listener.Addr().String()
	}
	if addr == "" {
		return nil, errors.New("httpapi: no listen address")
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("httpapi: listen address %q: %w", addr, err)
	}
	if opts.Token == "" && !IsLoopback(host) {
		return nil, fmt.Errorf("%w: %q (set http.token)", ErrInsecureListen, addr)
	}
	s := &Server{opts: opts, log: opts.Logger.With("platform", "http"), heartbeat: heartbeatInterval, files: newFileStore(opts.FilesDir)}
	if (opts.Operator == nil) != (opts.Store == nil) {
		return nil, errors.New("httpapi: the operator's view needs both Operator and Store")
	}
	if opts.Store != nil {
		s.audit = &auditLog{st: opts.Store}
	}
	if opts.Token != "" {
		s.tokenHash = sha256.Sum256([]byte(opts.Token))
	}
	s.page, err = renderPage("web/index.html", opts.Token != "", opts.Operator != nil)
	if err == nil && opts.Operator != nil {
		s.admin, err = renderPage("web/admin.html", opts.Token != "", true)
	}
	if err != nil {
		return nil, fmt.Errorf("httpapi: prepare the web page: %w", err)
	}
	return s, nil
}

// Platform returns "http".
func (s *Server) Platform() string { return "http" }

// Start listens (or takes opts.Listener) and serves until ctx is done, then
// shuts down gracefully: it stops accepting, waits up to ShutdownGrace for
// open streams to end and closes what is left. It returns nil after a clean
// stop and an error when it cannot listen or serving fails. ctx is also the
// context of every message handed to h, so a turn outlives the request that
// started it. Call Start once.
func (s *Server) Start(ctx context.Context, h core.Handler) error {
	ln := s.opts.Listener
	if ln == nil {
		var err error
		ln, err = net.Listen("tcp", s.opts.Listen)
		if err != nil {
			return fmt.Errorf("httpapi: listen on %s: %w", s.opts.Listen, err)
		}
	}
	srv := &http.Server{
		Handler:           s.routes(ctx, h),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	s.log.Info("http: serving the API and the web page", "addr", ln.Addr().String(), "token", s.opts.Token != "")

	select {
	case err := <-served:
		return fmt.Errorf("httpapi: serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.log.Warn("http: streams still open after the grace period; closing them", "err", err)
		_ = srv.Close()
	}
	<-served // http.ErrServerClosed
	// Close cut the streams' connections, which ends their handlers: wait
	// for them, so nothing of this server runs (or logs) once Start returns.
	s.streams.closeAndWait()
	s.files.close()
	s.log.Info("http: stopped")
	return nil
}

// routes builds the handler tree; base is the context handed to h with
// every message.
func (s *Server) routes(base context.Context, h core.Handler) http.Handler {
	api := http.NewServeMux()
	api.HandleFunc("POST /v1/chat", func(w http.ResponseWriter, r *http.Request) { s.chat(base, h, w, r) })
	api.HandleFunc("GET /v1/files/{id}", s.files.serve)
	api.HandleFunc("POST /v1/permissions", func(w http.ResponseWriter, r *http.Request) { s.permissions(h, w, r) })
	if s.opts.Operator != nil {
		api.HandleFunc("GET /v1/conversations", s.conversations)
		api.HandleFunc("GET /v1/conversations/{key}", s.conversation)
		api.HandleFunc("GET /v1/conversations/{key}/events", s.events)
		api.HandleFunc("GET /v1/conversations/{key}/runs", s.runs)
		api.HandleFunc("GET /v1/conversations/{key}/diff", s.diff)
		api.HandleFunc("POST /v1/conversations/{key}/stop", s.stopConversation)
		api.HandleFunc("POST /v1/conversations/{key}/new", s.newConversation)
		api.HandleFunc("GET /v1/usage/daily", s.dailyUsage)
		api.HandleFunc("GET /v1/doctor", s.doctor)
	}
	api.HandleFunc("/v1/chat", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "use POST")
	})
	api.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such API route")
	})

	mux := http.NewServeMux()
	mux.Handle("/v1/", s.guard(api))
	if s.opts.Metrics != nil {
		mux.Handle("GET /metrics", s.guard(s.opts.Metrics))
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if s.opts.Healthy != nil {
			if ok, why := s.opts.Healthy(); !ok {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(why))
				return
			}
		}
		_, _ = w.Write([]byte("ok"))
	})
	s.pageRoutes(mux)
	return mux
}

// guard admits a /v1 request: the bearer token when one is configured;
// otherwise a loopback Host header. In both cases a browser request must
// come from the page's own origin.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r.Host) {
			writeError(w, http.StatusForbidden, "cross-origin requests are not allowed")
			return
		}
		if s.opts.Token != "" {
			if !s.authorized(r.Header.Get("Authorization")) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="golem"`)
				writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
				return
			}
		} else if !IsLoopback(hostOnly(r.Host)) {
			writeError(w, http.StatusForbidden, "without a token the API answers only requests to localhost")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorized compares the bearer token in constant time (over hashes, so
// the token's length does not leak either).
func (s *Server) authorized(header string) bool {
	const prefix = "Bearer "
	if len(header) < len(prefix) || !strings.EqualFold(header[:len(prefix)], prefix) {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(header[len(prefix):])))
	return subtle.ConstantTimeCompare(got[:], s.tokenHash[:]) == 1
}

// sameOrigin reports whether a browser's Origin header names host (the
// request's Host header, with its port).
func sameOrigin(origin, host string) bool {
	rest, ok := strings.CutPrefix(origin, "http://")
	if !ok {
		rest, ok = strings.CutPrefix(origin, "https://")
	}
	return ok && strings.EqualFold(rest, host)
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}
