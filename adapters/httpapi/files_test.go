package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/internal/bottest"
)

// serveWithToken is serveDispatcher behind a token; setup adjusts the
// server before it starts.
func serveWithToken(t *testing.T, setup func(*Server)) string {
	t.Helper()
	ln, base := listen(t)
	b := bottest.New(t, bottest.Options{Trusted: []string{"http"}})
	s, err := New(Options{Listener: ln, Token: "s3cret", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(s)
	}
	b.Start(s)
	return base
}

func chatWithToken(t *testing.T, base, text string) []wireEvent {
	t.Helper()
	body, _ := json.Marshal(chatRequest{Conversation: "files", Text: text})
	res := postChat(t, base, string(body), "Authorization", "Bearer s3cret")
	if res.StatusCode != 200 {
		t.Fatalf("POST: status %d", res.StatusCode)
	}
	return decodeEvents(t, newSSEReader(res.Body).readAll(t))
}

func get(t *testing.T, url, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

func TestFilesTheAgentLeavesAreOfferedAndServed(t *testing.T) {
	base := serveWithToken(t, nil)
	evs := chatWithToken(t, base, "!write outbox/re\"po|rt.txt the report\nhere it is")
	if len(evs) < 2 || evs[len(evs)-2].Type != "file" {
		t.Fatalf("no file event right before the terminal one: %+v", evs)
	}
	f := evs[len(evs)-2]
	if f.Name != `re_po_rt.txt` || f.Size != 10 || !strings.HasPrefix(f.URL, "/v1/files/") {
		t.Fatalf("file event %+v", f)
	}

	if res := get(t, base+f.URL, ""); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a file without the token: status %d", res.StatusCode)
	}
	res := get(t, base+f.URL, "s3cret")
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || string(body) != "the report" {
		t.Fatalf("GET %s = %d %q", f.URL, res.StatusCode, body)
	}
	if cd := res.Header.Get("Content-Disposition"); cd != `attachment; filename=re_po_rt.txt` || res.Header.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("served as %q, %q", res.Header.Get("Content-Type"), cd)
	}
	if res := get(t, base+"/v1/files/0123456789abcdef0123456789abcdef", "s3cret"); res.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown file: status %d", res.StatusCode)
	}
}

func TestAFileOverTheCapIsAWarning(t *testing.T) {
	base := serveWithToken(t, func(s *Server) { s.files.max = 5 })
	evs := chatWithToken(t, base, "!write outbox/big.txt more than five bytes\nok")
	var warned bool
	for _, ev := range evs {
		if ev.Type == "file" {
			t.Errorf("a file over the cap was offered: %+v", ev)
		}
		warned = warned || ev.Type == "warning" && strings.Contains(ev.Message, "big.txt") && strings.Contains(ev.Message, "over the 5 bytes")
	}
	if !warned {
		t.Errorf("no warning names the file over the cap: %+v", evs)
	}
}

// A file's URL keeps working after a restart while the file is kept: the
// copies are on disk under Options.FilesDir, nothing of them only in
// memory; one past its time is gone.
func TestAFileURLOutlivesARestart(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "golem.db")
	start := func() (string, *bottest.Bot) {
		ln, base := listen(t)
		b := bottest.New(t, bottest.Options{Trusted: []string{"http"}, DB: db})
		s, err := New(Options{Listener: ln, Token: "s3cret", Logger: testLogger(t), FilesDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		b.Start(s)
		return base, b
	}
	base, b := start()
	evs := chatWithToken(t, base, "!write outbox/report.txt the report\nhere it is")
	if len(evs) < 2 || evs[len(evs)-2].Type != "file" {
		t.Fatalf("no file event: %+v", evs)
	}
	url := evs[len(evs)-2].URL
	b.Stop()

	base, _ = start()
	res := get(t, base+url, "s3cret")
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || string(body) != "the report" {
		t.Fatalf("after a restart GET %s = %d %q", url, res.StatusCode, body)
	}
	if cd := res.Header.Get("Content-Disposition"); !strings.Contains(cd, "report.txt") {
		t.Errorf("served as %q", cd)
	}
	old := time.Now().Add(-FileTTL - time.Minute)
	entries, _ := os.ReadDir(filepath.Join(dir, strings.TrimPrefix(url, "/v1/files/")))
	for _, e := range entries {
		os.Chtimes(filepath.Join(dir, strings.TrimPrefix(url, "/v1/files/"), e.Name()), old, old)
	}
	if res := get(t, base+url, "s3cret"); res.StatusCode != http.StatusNotFound {
		t.Errorf("a file past FileTTL: status %d", res.StatusCode)
	}
	for _, id := range []string{"..", "..%2f..%2fetc", "0123456789ABCDEF0123456789abcdef", strings.Repeat("a", 600)} {
		if res := get(t, base+"/v1/files/"+id, "s3cret"); res.StatusCode != http.StatusNotFound && res.StatusCode != http.StatusBadRequest {
			t.Errorf("GET /v1/files/%s: status %d", id, res.StatusCode)
		}
	}
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{"a.txt": "a.txt", "../../etc/passwd": "passwd", "..": "file", "": "file",
		"a\x00b": "file", `..\..\x.txt`: "x.txt", "/": "file", "réport ✓.md": "réport ✓.md"} {
		if got := safeName(in); got != want {
			t.Errorf("safeName(%q) = %q, want %q", in, got, want)
		}
	}
}
