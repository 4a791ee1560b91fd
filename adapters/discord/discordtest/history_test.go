package discordtest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// list GETs path and returns the status and the ids of the messages
// answered (nil for an error, whose code is returned).
func list(t *testing.T, s *Server, path string) (int, []string, float64) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.URL()+"/api/v9"+path, nil)
	req.Header.Set("Authorization", "Bot "+s.Options().BotToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&e)
		code, _ := e["code"].(float64)
		return resp.StatusCode, nil, code
	}
	var msgs []map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&msgs); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	ids := []string{}
	for _, m := range msgs {
		ids = append(ids, m["id"].(string))
	}
	return resp.StatusCode, ids, 0
}

func TestChannelHistoryLikeDiscord(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	var ids []string
	for i := range 60 {
		ids = append(ids, s.Post(UserMessage{Channel: "c1", Guild: "g", User: "u" + strconv.Itoa(i%3), Content: "m" + strconv.Itoa(i)}))
	}
	s.Post(UserMessage{Channel: "c2", Guild: "g", User: "u1", Content: "elsewhere"})
	rev := func(from, to int) []string { // ids[from..to], newest first
		var out []string
		for i := to; i >= from; i-- {
			out = append(out, ids[i])
		}
		return out
	}
	for _, tt := range []struct {
		name, query string
		want        []string
	}{
		{"default limit 50, newest first", "", rev(10, 59)},
		{"before", "?before=" + ids[20] + "&limit=5", rev(15, 19)},
		{"before the first", "?before=" + ids[0], []string{}},
		{"after: the oldest after it, newest first", "?after=" + ids[20] + "&limit=3", rev(21, 23)},
		{"around", "?around=" + ids[30] + "&limit=5", rev(28, 32)},
		{"limit 100", "?limit=100", rev(0, 59)},
	} {
		status, got, _ := list(t, s, "/channels/c1/messages"+tt.query)
		if status != 200 || strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%s: %d %v, want %v", tt.name, status, got, tt.want)
		}
	}
	for _, tt := range []struct {
		name, query string
		status      int
		code        float64
	}{
		{"limit 0", "?limit=0", 400, 50035},
		{"limit 101", "?limit=101", 400, 50035},
		{"limit not a number", "?limit=ten", 400, 50035},
		{"two cursors", "?before=" + ids[5] + "&after=" + ids[1], 400, 50035},
		{"cursor not a snowflake", "?before=abc", 400, 50035},
	} {
		if status, _, code := list(t, s, "/channels/c1/messages"+tt.query); status != tt.status || code != tt.code {
			t.Errorf("%s: %d code %v, want %d code %v", tt.name, status, code, tt.status, tt.code)
		}
	}

	status, body, _ := do(t, s, "GET", "/channels/c1/messages/"+ids[7], "", true)
	if status != 200 || body["content"] != "m7" {
		t.Errorf("GET one message: %d %v", status, body)
	}
	for _, tt := range []struct {
		name, path string
		bot        bool
		status     int
		code       float64
	}{
		{"in another channel", "/channels/c2/messages/" + ids[7], true, 404, 10008},
		{"unknown", "/channels/c1/messages/1", true, 404, 10008},
		{"no bot token", "/channels/c1/messages/" + ids[7], false, 401, 0},
	} {
		status, body, _ := do(t, s, "GET", tt.path, "", tt.bot)
		if code, _ := body["code"].(float64); status != tt.status || code != tt.code {
			t.Errorf("%s: %d %v, want %d code %v", tt.name, status, body, tt.status, tt.code)
		}
	}

	s.Delete(ids[59])
	if _, got, _ := list(t, s, "/channels/c1/messages?limit=1"); len(got) != 1 || got[0] != ids[58] {
		t.Errorf("after a deletion the newest is %v, want %s", got, ids[58])
	}
	if status, body, _ := do(t, s, "GET", "/channels/c1/messages/"+ids[59], "", true); status != 404 || body["code"] != float64(10008) {
		t.Errorf("a deleted message: %d %v, want 404 Unknown Message", status, body)
	}

	s.NoHistory("c1")
	if status, got, _ := list(t, s, "/channels/c1/messages"); status != 200 || len(got) != 0 {
		t.Errorf("without Read Message History: %d %v, want 200 and no messages", status, got)
	}
	if status, body, _ := do(t, s, "GET", "/channels/c1/messages/"+ids[7], "", true); status != 403 || body["code"] != float64(50001) {
		t.Errorf("one message without Read Message History: %d %v, want 403 Missing Access", status, body)
	}
}

// TestHistoryCarriesAuthorsMentionsAndReplies: a user's message as GET
// answers it names its author, its mentions (by the names they posted
// with) and roles, its files, and the message it replies to; the bot's
// own are marked bot. The gateway's MESSAGE_CREATE adds the member's nick.
func TestHistoryCarriesAuthorsMentionsAndReplies(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	first := s.Post(UserMessage{Channel: "c1", Guild: "g", User: "u2", UserName: "ann", GlobalName: "Ann", Content: "hi"})
	reply := s.Post(UserMessage{Channel: "c1", Guild: "g", User: "u3", UserName: "bob", Nick: "Bobby", Content: "<@u2> <@&7> look",
		Mentions: []string{"u2"}, MentionRoles: []string{"7"}, ReplyTo: first, Attachments: []Attachment{{Name: "a.log", Data: []byte("x")}}})
	_, body, _ := do(t, s, "GET", "/channels/c1/messages/"+reply, "", true)
	b, _ := json.Marshal(body)
	for _, want := range []string{`"username":"bob"`, `"global_name":"Ann"`, `"mention_roles":["7"]`, `"filename":"a.log"`,
		`"referenced_message":{`, `"content":"hi"`, `"message_reference":{"channel_id":"c1","message_id":"` + first + `"}`, `"type":19`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("GET of the reply lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "Bobby") {
		t.Errorf("REST carries no member nick:\n%s", b)
	}
	s.Delete(first)
	_, body, _ = do(t, s, "GET", "/channels/c1/messages/"+reply, "", true)
	if v, has := body["referenced_message"]; !has || v != nil {
		t.Errorf("a reply to a deleted message: referenced_message = %v (present %v), want null", v, has)
	}
	if n := len(s.Messages("c1")); n != 0 {
		t.Errorf("Messages lists %d users' messages, want the bot's only", n)
	}
	s.Wait(0, func(v View) bool {
		if n := len(v.Posted("c1")); n != 1 {
			t.Errorf("Posted lists %d messages, want the reply (the first was deleted)", n)
		}
		return true
	})
}

// TestThreadOpensWithAStarterMessage: a thread started on a message has
// the message's id and opens with a system message (type 21) that refers
// to it in the parent channel; the bot's Messages leave it out.
func TestThreadOpensWithAStarterMessage(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	topic := s.Post(UserMessage{Channel: "c1", Guild: "g", User: "u2", Content: "topic"})
	thread := s.StartThread(topic)
	if thread != topic || s.StartThread(topic) != thread || s.StartThread("1") != "" {
		t.Fatalf("StartThread = %q, want the message's id once, and nothing for an unknown message", thread)
	}
	req, _ := http.NewRequest("GET", s.URL()+"/api/v9/channels/"+thread+"/messages", nil)
	req.Header.Set("Authorization", "Bot "+s.Options().BotToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msgs []map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&msgs)
	if len(msgs) != 1 {
		t.Fatalf("the thread holds %d messages, want its opening one", len(msgs))
	}
	b, _ := json.Marshal(msgs[0])
	for _, want := range []string{`"type":21`, `"message_reference":{"channel_id":"c1","guild_id":"g","message_id":"` + topic + `"}`, `"referenced_message":{`, `"content":"topic"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the opening message lacks %s:\n%s", want, b)
		}
	}
	if n := len(s.Messages(thread)); n != 0 {
		t.Errorf("Messages lists %d in the thread, want none of the bot's", n)
	}
}
