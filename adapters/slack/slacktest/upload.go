package slacktest

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Upload is a file the bot shared with files upload v2.
type Upload struct {
	ID       string
	Channel  string
	ThreadTS string // the thread it was shared in; empty at the top
	Name     string // the filename given to files.getUploadURLExternal
	Title    string
	Content  []byte
}

// Uploads returns the files the bot shared, in order.
func (s *Server) Uploads() []Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.uploads)
}

// uploadLocked answers the two Web API steps of files upload v2, as Slack
// does: files.getUploadURLExternal (filename and a positive length
// required) hands out an upload_url on this host; files.completeUploadExternal
// shares files whose bytes were uploaded, with exactly the length announced,
// in channel_id (and thread_ts).
func (s *Server) uploadLocked(method string, a map[string]string) (map[string]any, string) {
	if method == "files.getUploadURLExternal" {
		n, err := strconv.Atoi(a["length"])
		switch {
		case a["filename"] == "":
			return nil, "invalid_arguments"
		case err != nil || n <= 0:
			return nil, "invalid_length"
		}
		f := &file{id: s.nextIDLocked("F"), name: a["filename"], mimetype: "application/octet-stream", length: n}
		s.pending[f.id] = f
		return map[string]any{"upload_url": s.URL + "/upload/" + f.id, "file_id": f.id}, ""
	}
	var files []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal([]byte(a["files"]), &files); err != nil || len(files) == 0 {
		return nil, "invalid_arguments"
	}
	if a["channel_id"] == "" && a["channels"] == "" {
		return nil, "invalid_arguments" // Slack keeps it private; the bot meant to share it
	}
	var out []map[string]any
	for _, want := range files {
		f, ok := s.pending[want.ID]
		if !ok || f.content == nil || len(f.content) != f.length {
			return nil, "file_not_found" // not uploaded, or not all of it
		}
		delete(s.pending, f.id)
		s.files[f.id] = f
		s.uploads = append(s.uploads, Upload{ID: f.id, Channel: a["channel_id"], ThreadTS: a["thread_ts"],
			Name: f.name, Title: want.Title, Content: f.content})
		out = append(out, map[string]any{"id": f.id, "title": want.Title})
	}
	return map[string]any{"files": out}, ""
}

// serveUpload answers POST /upload/{id}, the upload_url step: a multipart
// body with the bytes in field "file" (or the raw body), with the bot
// token. It is recorded as the call "files.upload".
func (s *Server) serveUpload(w http.ResponseWriter, r *http.Request) {
	var content []byte
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
		if part, _, err := r.FormFile("file"); err == nil {
			content, _ = io.ReadAll(part)
			part.Close()
		}
	} else {
		content, _ = io.ReadAll(r.Body)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notifyLocked()
	call := Call{Method: "files.upload", Args: map[string]string{"file": r.PathValue("id")}, At: time.Now()}
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	f, ok := s.pending[r.PathValue("id")]
	switch {
	case tok != BotToken:
		call.Status = http.StatusForbidden
	case !ok || content == nil:
		call.Status = http.StatusNotFound
	default:
		call.Status = http.StatusOK
		f.content = content
	}
	s.calls = append(s.calls, call)
	w.WriteHeader(call.Status)
	_, _ = w.Write([]byte("OK - " + strconv.Itoa(len(content))))
}
