package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

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
