package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func postPermission(t *testing.T, base, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/permissions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// The stream carries the request, POST /v1/permissions decides it (with
// the contract's status codes), and the stream carries the decision before
// the agent's answer goes on.
func TestPermissionsContract(t *testing.T) {
	base := serveDispatcher(t)
	body, _ := json.Marshal(chatRequest{Conversation: "c1", Text: "!ask Write {\"file_path\":\"a.txt\",\"content\":\"x\"}\nwritten"})
	res := postChat(t, base, string(body))
	if res.StatusCode != 200 {
		t.Fatalf("POST /v1/chat: %d", res.StatusCode)
	}
	sse := newSSEReader(res.Body)
	var req struct {
		Type, ID, Tool string
		Args           map[string]string
	}
	for req.Type != "permission_request" {
		p, err := sse.next()
		if err != nil {
			t.Fatalf("the stream ended before a permission_request: %v", err)
		}
		if err := json.Unmarshal([]byte(p), &req); err != nil {
			t.Fatal(err)
		}
	}
	if req.Tool != "Write" || req.Args["file_path"] != "a.txt" || req.ID == "" {
		t.Fatalf("permission_request %+v", req)
	}
	for _, tc := range []struct {
		body string
		want int
	}{
		{`not json`, 400},
		{`{"conversation":"c1","id":"` + req.ID + `","decision":"maybe"}`, 400},
		{`{"conversation":"c1","id":"nope","decision":"allow"}`, 404},
		{`{"conversation":"c2","id":"` + req.ID + `","decision":"allow"}`, 404},
		{`{"conversation":"c1","id":"` + req.ID + `","decision":"allow"}`, 200},
		{`{"conversation":"c1","id":"` + req.ID + `","decision":"deny"}`, 409},
	} {
		if got := postPermission(t, base, tc.body); got != tc.want {
			t.Errorf("POST /v1/permissions %s: %d, want %d", tc.body, got, tc.want)
		}
	}
	events := decodeEvents(t, sse.readAll(t))
	var decision, answer int
	for i, e := range events {
		switch e.Type {
		case "permission_decision":
			decision = i + 1
		case "text":
			if answer == 0 {
				answer = i + 1
			}
		}
	}
	if decision == 0 || answer == 0 || decision > answer || !strings.Contains(answerText(events), "echo: written") {
		t.Errorf("after the decision the stream had %+v", events)
	}
	if last := events[len(events)-1]; last.Type != "done" {
		t.Errorf("the stream ended with %+v", last)
	}
}
