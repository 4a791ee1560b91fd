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
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/golem-chat/golem/parser"
)

// Files handed back by the agent: the API copies each into a folder of its
// own when its file event passes, so that what a client fetches is what the
// turn left, and serves it at /v1/files/ID (behind the same guard as every
// /v1 route) for FileTTL. The copies live on disk, each as ID/NAME under
// Options.FilesDir, and nothing of them only in memory: a URL keeps working
// after a restart while its file is there.
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

	mu   sync.Mutex
	dir  string // Options.FilesDir, or a temporary folder made on first use
	temp bool   // dir is temporary: removed by close
}

func newFileStore(dir string) *fileStore {
	return &fileStore{ttl: FileTTL, max: MaxFileBytes, dir: dir}
}

// fileID is the form of the ids put makes: a path element of its own.
var fileID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// event turns a file event from core (with the bytes' Path) into the one
// the client sees (with a URL), copying the bytes; a file it cannot or
// will not serve becomes a warning that says so.
func (fs *fileStore) event(ev parser.Event) parser.Event {
	f := ev.File
	if fs.max > 0 && f.Size > fs.max {
		return parser.Event{Type: parser.Warning, Message: fmt.Sprintf(
			"the agent left %s (%d bytes), over the %d bytes the HTTP API serves; it is at %s", ev.Name, f.Size, fs.max, f.Path)}
	}
	id, size, err := fs.put(ev.Name, f)
	if err != nil {
		return parser.Event{Type: parser.Warning, Message: fmt.Sprintf("the agent left %s, which could not be offered: %v; it is at %s", ev.Name, err, f.Path)}
	}
	return parser.Event{Type: parser.File, Name: ev.Name, File: &parser.FileInfo{Size: size, URL: "/v1/files/" + id}}
}

// safeName is name as one path element: its last element, or "file" when
// that is empty or not a name ("..", a NUL).
func safeName(name string) string {
	base := filepath.Base(strings.ReplaceAll(name, `\`, "/"))
	if base == "." || base == ".." || base == "/" || base == "" || strings.ContainsRune(base, 0) {
		return "file"
	}
	return base
}

func (fs *fileStore) put(name string, src *parser.FileInfo) (id string, size int64, err error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.dir == "" {
		if fs.dir, err = os.MkdirTemp("", "golem-http-files-"); err != nil {
			return "", 0, err
		}
		fs.temp = true
	}
	if err := os.MkdirAll(fs.dir, 0o700); err != nil {
		return "", 0, err
	}
	fs.sweep()
	var b [16]byte
	_, _ = rand.Read(b[:])
	id = hex.EncodeToString(b[:])
	open := src.Open
	if open == nil {
		open = func() (io.ReadCloser, error) { return os.Open(src.Path) }
	}
	in, err := open()
	if err != nil {
		return "", 0, err
	}
	defer in.Close()
	folder := filepath.Join(fs.dir, id)
	if err := os.Mkdir(folder, 0o700); err != nil {
		return "", 0, err
	}
	out, err := os.OpenFile(filepath.Join(folder, safeName(name)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		os.RemoveAll(folder)
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
		os.RemoveAll(folder)
		return "", 0, err
	}
	return id, size, nil
}

// sweep removes the files whose time has passed. Called with mu held.
func (fs *fileStore) sweep() {
	entries, _ := os.ReadDir(fs.dir)
	for _, e := range entries {
		if !fileID.MatchString(e.Name()) {
			continue
		}
		if _, _, ok := fs.find(e.Name()); !ok {
			os.RemoveAll(filepath.Join(fs.dir, e.Name()))
		}
	}
}

// find returns the path and name of file id while it is fetchable.
func (fs *fileStore) find(id string) (path, name string, ok bool) {
	if fs.dir == "" || !fileID.MatchString(id) {
		return "", "", false
	}
	entries, err := os.ReadDir(filepath.Join(fs.dir, id))
	if err != nil || len(entries) != 1 || !entries[0].Type().IsRegular() {
		return "", "", false
	}
	info, err := entries[0].Info()
	if err != nil || time.Since(info.ModTime()) > fs.ttl {
		return "", "", false
	}
	return filepath.Join(fs.dir, id, entries[0].Name()), entries[0].Name(), true
}

// serve answers GET /v1/files/{id} with the bytes, as a download.
func (fs *fileStore) serve(w http.ResponseWriter, r *http.Request) {
	fs.mu.Lock()
	path, name, ok := fs.find(r.PathValue("id"))
	fs.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "no such file (files are kept for "+FileTTL.String()+")")
		return
	}
	in, err := os.Open(path)
	if err != nil {
		writeError(w, http.StatusNotFound, "no such file")
		return
	}
	defer in.Close()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "private, no-store")
	http.ServeContent(w, r, "", time.Time{}, in)
}

// close removes the stored files when they are in a temporary folder;
// those in Options.FilesDir stay for the next start.
func (fs *fileStore) close() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.temp {
		os.RemoveAll(fs.dir)
		fs.dir, fs.temp = "", false
	}
}
