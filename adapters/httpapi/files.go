package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/golem-chat/golem/parser"
)

// Files handed back by the agent: the API copies each into a folder of its
// own when its file event passes, so that what a client fetches is what the
// turn left, and serves it at /v1/files/ID (behind the same guard as every
// /v1 route) for FileTTL.
const (
	// FileTTL is how long a file stays fetchable.
	FileTTL = 2 * time.Hour
	// MaxFileBytes is the largest file the API serves; a bigger one
	// becomes a warning event that names it.
	MaxFileBytes = 100 << 20
)

// fileStore keeps the files of file events. Safe for concurrent use.
type fileStore struct {
	ttl time.Duration
	max int64

	mu    sync.Mutex
	dir   string // made on first use
	files map[string]storedFile
}

type storedFile struct {
	name    string
	path    string
	size    int64
	expires time.Time
}

func newFileStore() *fileStore {
	return &fileStore{ttl: FileTTL, max: MaxFileBytes, files: map[string]storedFile{}}
}

// event turns a file event from core (with the bytes' Path) into the one
// the client sees (with a URL), copying the bytes; a file it cannot or
// will not serve becomes a warning that says so.
func (fs *fileStore) event(ev parser.Event) parser.Event {
	f := ev.File
	if fs.max > 0 && f.Size > fs.max {
		return parser.Event{Type: parser.Warning, Message: fmt.Sprintf(
			"the agent left %s (%d bytes), over the %d bytes the HTTP API serves; it is at %s", ev.Name, f.Size, fs.max, f.Path)}
	}
	id, size, err := fs.put(ev.Name, f.Path)
	if err != nil {
		return parser.Event{Type: parser.Warning, Message: fmt.Sprintf("the agent left %s, which could not be offered: %v; it is at %s", ev.Name, err, f.Path)}
	}
	return parser.Event{Type: parser.File, Name: ev.Name, File: &parser.FileInfo{Size: size, URL: "/v1/files/" + id}}
}

func (fs *fileStore) put(name, src string) (id string, size int64, err error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	now := time.Now()
	for k, f := range fs.files {
		if now.After(f.expires) {
			os.Remove(f.path)
			delete(fs.files, k)
		}
	}
	if fs.dir == "" {
		if fs.dir, err = os.MkdirTemp("", "golem-http-files-"); err != nil {
			return "", 0, err
		}
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	id = hex.EncodeToString(b[:])
	in, err := os.Open(src)
	if err != nil {
		return "", 0, err
	}
	defer in.Close()
	path := filepath.Join(fs.dir, id)
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", 0, err
	}
	size, err = io.Copy(out, io.LimitReader(in, fs.max+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && fs.max > 0 && size > fs.max {
		err = fmt.Errorf("it grew over %d bytes", fs.max)
	}
	if err != nil {
		os.Remove(path)
		return "", 0, err
	}
	fs.files[id] = storedFile{name: name, path: path, size: size, expires: now.Add(fs.ttl)}
	return id, size, nil
}

// serve answers GET /v1/files/{id} with the bytes, as a download.
func (fs *fileStore) serve(w http.ResponseWriter, r *http.Request) {
	fs.mu.Lock()
	f, ok := fs.files[r.PathValue("id")]
	fs.mu.Unlock()
	if !ok || time.Now().After(f.expires) {
		writeError(w, http.StatusNotFound, "no such file (files are kept for "+FileTTL.String()+")")
		return
	}
	in, err := os.Open(f.path)
	if err != nil {
		writeError(w, http.StatusNotFound, "no such file")
		return
	}
	defer in.Close()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": f.name}))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "private, no-store")
	http.ServeContent(w, r, "", time.Time{}, in)
}

// close removes the stored files.
func (fs *fileStore) close() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.dir != "" {
		os.RemoveAll(fs.dir)
	}
	fs.dir, fs.files = "", map[string]storedFile{}
}
