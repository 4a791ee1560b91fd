package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/parser"
)

// MaxConversationLen bounds the conversation id of a chat request, in bytes.
const MaxConversationLen = 128

// chatRequest is the body of POST /v1/chat.
type chatRequest struct {
	Conversation string `json:"conversation"`
	Text         string `json:"text"`
}

// chat answers POST /v1/chat: it hands the message to h with a sink that
// queues events, and streams the queue as Server-Sent Events until the
// terminal event. If the client goes away the stream stops and the queue
// drops what comes later; the turn itself goes on (its context is base).
func (s *Server) chat(base context.Context, h core.Handler, w http.ResponseWriter, r *http.Request) {
	req, status, msg := s.readChatRequest(w, r)
	if status != 0 {
		writeError(w, status, msg)
		return
	}

	q := core.NewEventQueue()
	m := core.Message{
		Platform: "http",
		Channel:  req.Conversation,
		// The conversation is also the thread, so that session_scope
		// "thread" keeps one session per conversation too.
		Thread: req.Conversation,
		ID:     "http-" + strconv.FormatUint(s.seq.Add(1), 10),
		User:   "http",
		Text:   req.Text,
		DM:     true,
		Sink:   q.Push,
	}
	log := s.log.With("conversation", req.Conversation, "request", m.ID)

	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Accel-Buffering", "no") // reverse proxies: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if err := rc.Flush(); err != nil {
		log.Debug("http: client gone before the stream began", "err", err)
		return
	}

	if !s.streams.open() {
		return // the server is stopping
	}
	defer s.streams.done()
	start := time.Now()
	h.Handle(base, m)

	s.pump(w, r, rc, q, log, start)
}

// pump streams q's events as Server-Sent Events until the terminal event
// or the client's going away, with keep-alive comments while q is quiet;
// it closes q.
func (s *Server) pump(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, q *core.EventQueue, log *slog.Logger, start time.Time) {
	heartbeat := time.NewTicker(s.heartbeat)
	defer heartbeat.Stop()
	var frame bytes.Buffer
	sent := 0
	for {
		select {
		case <-q.Ready():
		case <-heartbeat.C:
			// A comment line keeps proxies from timing the stream out and
			// finds a vanished client while the turn is quiet.
			frame.Reset()
			frame.WriteString(": keep-alive\n\n")
			if err := writeFrame(rc, w, frame.Bytes()); err != nil {
				q.Close()
				log.Debug("http: client gone; the turn goes on without it", "err", err, "events", sent)
				return
			}
			continue
		case <-r.Context().Done():
			q.Close()
			log.Debug("http: client gone; the turn goes on without it", "events", sent)
			return
		}
		frame.Reset()
		terminal := false
		for _, ev := range q.Take() {
			if ev.Type == parser.File {
				ev = s.files.event(ev)
			}
			b, _ := ev.MarshalJSON() // never fails
			frame.WriteString("data: ")
			frame.Write(b)
			frame.WriteString("\n\n")
			sent++
			if ev.Terminal() {
				terminal = true
				break // nothing follows a terminal event
			}
		}
		if frame.Len() == 0 {
			continue
		}
		write := writeFrame
		if terminal {
			// Not flushed here: the server flushes it when the handler
			// returns, with the end of the chunked body, in one write,
			// so the client sees the last event and the stream's end
			// at once.
			write = writeLast
		}
		if err := write(rc, w, frame.Bytes()); err != nil {
			q.Close()
			log.Debug("http: client gone; the turn goes on without it", "err", err, "events", sent)
			return
		}
		if terminal {
			q.Close()
			log.Debug("http: stream ended", "events", sent, "duration_ms", time.Since(start).Milliseconds())
			return
		}
	}
}

// readChatRequest decodes and validates the body. A non-zero status means
// the request is refused with that status and message.
func (s *Server) readChatRequest(w http.ResponseWriter, r *http.Request) (chatRequest, int, string) {
	var req chatRequest
	// A JSON content type makes browsers ask before a cross-site post
	// (a preflight this server never grants), unlike text/plain forms.
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return req, http.StatusUnsupportedMediaType, "the body must be JSON (Content-Type: application/json)"
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
	defer func() { _ = rc.SetReadDeadline(time.Time{}) }()

	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.opts.MaxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(&req)
	if err == nil && dec.Decode(&struct{}{}) != io.EOF {
		err = errors.New("more than one JSON value")
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return req, http.StatusRequestEntityTooLarge, "the body is larger than " + strconv.FormatInt(tooLarge.Limit, 10) + " bytes"
	case err != nil:
		return req, http.StatusBadRequest, "bad JSON body: " + err.Error()
	case req.Conversation == "":
		return req, http.StatusBadRequest, `"conversation" is missing`
	case len(req.Conversation) > MaxConversationLen:
		return req, http.StatusBadRequest, `"conversation" is longer than ` + strconv.Itoa(MaxConversationLen) + " bytes"
	case req.Text == "":
		return req, http.StatusBadRequest, `"text" is missing`
	}
	return req, 0, ""
}

// writeFrame writes one or more SSE frames and flushes them, giving a slow
// client writeTimeout before the stream is abandoned.
func writeFrame(rc *http.ResponseController, w io.Writer, b []byte) error {
	_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := w.Write(b); err != nil {
		return err
	}
	return rc.Flush()
}

// writeLast writes the stream's last frames without flushing them (the
// server does once the handler returns), with writeTimeout as writeFrame.
func writeLast(rc *http.ResponseController, w io.Writer, b []byte) error {
	_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err := w.Write(b)
	return err
}

// writeError answers {"error": msg} with status.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Error string `json:"error"`
	}{msg})
}
