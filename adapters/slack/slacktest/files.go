package slacktest

import (
	"net/http"
	"net/url"
	"strings"
	"time"
)

// file is an uploaded file the fake serves at its url_private.
type file struct {
	id, name, mimetype string
	content            []byte
	downloads          int
	length             int // the length announced for an upload
}

// wire is the file as events and files.info show it.
func (f *file) wire(base string) map[string]any {
	u := base + "/files-pri/" + f.id + "/" + url.PathEscape(f.name)
	return map[string]any{"id": f.id, "name": f.name, "title": f.name, "mimetype": f.mimetype,
		"size": len(f.content), "mode": "hosted", "url_private": u, "url_private_download": u + "?download=1"}
}

// AddFile stores a file a user uploaded and returns it as an event's files
// entry (id, name, mimetype, size, url_private, url_private_download), for
// Event.Files. Downloading its url_private needs the bot token.
func (s *Server) AddFile(name, mimetype string, content []byte) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := &file{id: s.nextIDLocked("F"), name: name, mimetype: mimetype, content: content}
	s.files[f.id] = f
	return f.wire(s.URL)
}

// Downloads returns how many times the file id was downloaded with the
// right token.
func (s *Server) Downloads(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.files[id]; ok {
		return f.downloads
	}
	return 0
}

// serveFile answers GET /files-pri/{id}/{name}. Without the bot token it
// answers 403 (real Slack serves a login page instead, which is worse).
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notifyLocked()
	call := Call{Method: "files.download", Args: map[string]string{"file": r.PathValue("id")}, At: time.Now()}
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	f, ok := s.files[r.PathValue("id")]
	switch {
	case tok != BotToken:
		call.Status = http.StatusForbidden
		http.Error(w, "forbidden", http.StatusForbidden)
	case !ok:
		call.Status = http.StatusNotFound
		http.NotFound(w, r)
	default:
		call.Status = http.StatusOK
		f.downloads++
		w.Header().Set("Content-Type", f.mimetype)
		_, _ = w.Write(f.content)
	}
	s.calls = append(s.calls, call)
}
