package telegramtest

import (
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// MaxUpload is the largest file a bot may send (multipart upload), 50 MB;
// MaxPhoto the largest photo, 10 MB.
const (
	MaxUpload = 50 << 20
	MaxPhoto  = 10 << 20
)

// SentFile is the photo or document of a message the bot sent.
type SentFile struct {
	Method string // "sendPhoto" or "sendDocument"
	Name   string // the file name of the multipart part
	Data   []byte
}

// readParams reads a request's parameters: a form (query or urlencoded
// body) or, for an upload, a multipart body, whose file part (photo or
// document) is returned too.
func readParams(r *http.Request) (url.Values, *multipart.FileHeader, error) {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
		if err := r.ParseForm(); err != nil {
			return nil, nil, err
		}
		return r.Form, nil, nil
	}
	if err := r.ParseMultipartForm(MaxUpload + 1<<20); err != nil {
		return nil, nil, err
	}
	params := url.Values{}
	for k, v := range r.URL.Query() {
		params[k] = v
	}
	for k, v := range r.MultipartForm.Value {
		params[k] = v
	}
	for _, field := range []string{"photo", "document"} {
		if fh := r.MultipartForm.File[field]; len(fh) > 0 {
			return params, fh[0], nil
		}
	}
	return params, nil, nil
}

// answerLocked runs a method: an upload or one of methodLocked's.
func (s *Server) answerLocked(method string, p url.Values, up *multipart.FileHeader) (any, int, string) {
	if method != "sendPhoto" && method != "sendDocument" {
		return s.methodLocked(method, p)
	}
	field := "document"
	if method == "sendPhoto" {
		field = "photo"
	}
	chatID, err := strconv.ParseInt(p.Get("chat_id"), 10, 64)
	if err != nil || chatID == 0 {
		return nil, 400, "Bad Request: chat not found"
	}
	if up == nil {
		return nil, 400, "Bad Request: there is no " + field + " in the request"
	}
	if up.Size == 0 {
		return nil, 400, "Bad Request: file must be non-empty"
	}
	if method == "sendPhoto" && up.Size > MaxPhoto || up.Size > MaxUpload {
		return nil, 413, "Request Entity Too Large"
	}
	f, err := up.Open()
	if err != nil {
		return nil, 400, "Bad Request: " + err.Error()
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, 400, "Bad Request: " + err.Error()
	}
	c := s.chatLocked(chatID, "")
	m := &Message{Chat: chatID, FromBot: true, Text: p.Get("caption"), At: s.opts.Clock(),
		File: &SentFile{Method: method, Name: up.Filename, Data: data}}
	if code, desc := placeLocked(c, m, p); code != 0 {
		return nil, code, desc
	}
	s.addLocked(c, m)
	return s.messageJSON(c, m), 0, ""
}
