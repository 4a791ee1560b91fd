package telegramtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

type answer struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

func call(t *testing.T, s *Server, method string, p url.Values) answer {
	t.Helper()
	resp, err := http.PostForm(s.URL+"/bot"+s.Token()+"/"+method, p)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a answer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	if !a.OK && resp.StatusCode != a.ErrorCode {
		t.Fatalf("%s: HTTP status %d, error_code %d", method, resp.StatusCode, a.ErrorCode)
	}
	return a
}

func TestSendEditAndErrors(t *testing.T) {
	s := New(t, Options{})
	a := call(t, s, "sendMessage", url.Values{"chat_id": {"5"}, "text": {"<b>hi</b> &amp; bye"}, "parse_mode": {"HTML"}})
	if !a.OK {
		t.Fatalf("sendMessage: %+v", a)
	}
	var m struct {
		MessageID int64 `json:"message_id"`
	}
	_ = json.Unmarshal(a.Result, &m)
	edit := url.Values{"chat_id": {"5"}, "message_id": {"1"}, "text": {"<b>hi</b> &amp; bye"}, "parse_mode": {"HTML"}}
	if a := call(t, s, "editMessageText", edit); a.OK || !strings.Contains(a.Description, "message is not modified") {
		t.Fatalf("same-text edit answered %+v", a)
	}
	edit.Set("text", "<i>new</i>")
	if a := call(t, s, "editMessageText", edit); !a.OK {
		t.Fatalf("edit: %+v", a)
	}
	got := s.BotMessages(5)
	if len(got) != 1 || got[0].ID != m.MessageID || got[0].Text != "new" || got[0].Edits != 1 {
		t.Fatalf("messages = %+v", got)
	}
	if a := call(t, s, "sendMessage", url.Values{"chat_id": {"5"}, "text": {"<x>bad</x>"}, "parse_mode": {"HTML"}}); a.OK || !strings.Contains(a.Description, "can't parse entities") {
		t.Fatalf("bad HTML answered %+v", a)
	}
	if a := call(t, s, "sendMessage", url.Values{"chat_id": {"5"}, "text": {strings.Repeat("é", MaxLen+1)}}); a.OK || !strings.Contains(a.Description, "too long") {
		t.Fatalf("long text answered %+v", a)
	}
	if a := call(t, s, "noSuchMethod", nil); a.OK || a.ErrorCode != 404 {
		t.Fatalf("unknown method answered %+v", a)
	}
	resp, err := http.PostForm(s.URL+"/botWRONG/getMe", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("wrong token: status %d", resp.StatusCode)
	}
}

func TestScriptedFailures(t *testing.T) {
	s := New(t, Options{})
	s.Fail("sendMessage", 1, Failure{Code: 429, Desc: "Too Many Requests: retry after 7", RetryAfter: 7})
	s.Fail("sendMessage", 1, Failure{HTMLOnly: true, Code: 400, Desc: "Bad Request: can't parse entities: x"})
	s.Fail("", 1, Failure{Code: 502, Desc: "Bad Gateway"})
	p := url.Values{"chat_id": {"5"}, "text": {"plain"}}
	if a := call(t, s, "sendMessage", p); a.ErrorCode != 429 || a.Parameters.RetryAfter != 7 {
		t.Fatalf("first: %+v", a)
	}
	// The HTML-only failure is skipped by a plain request; the 502 matches.
	if a := call(t, s, "sendMessage", p); a.ErrorCode != 502 {
		t.Fatalf("second: %+v", a)
	}
	if a := call(t, s, "sendMessage", p); !a.OK {
		t.Fatalf("third: %+v", a)
	}
	p.Set("parse_mode", "HTML")
	if a := call(t, s, "sendMessage", p); a.ErrorCode != 400 || !strings.Contains(a.Description, "can't parse entities") {
		t.Fatalf("fourth: %+v", a)
	}
	if n := len(s.Calls("sendMessage")); n != 4 {
		t.Fatalf("recorded %d sendMessage calls, want 4", n)
	}
}

func TestRateEnforcement(t *testing.T) {
	s := New(t, Options{EnforceRates: true, PerChatInterval: time.Hour, GlobalPerSecond: 3})
	send := func(chat string) answer {
		return call(t, s, "sendMessage", url.Values{"chat_id": {chat}, "text": {"x"}})
	}
	if a := send("1"); !a.OK {
		t.Fatalf("first: %+v", a)
	}
	if a := send("1"); a.ErrorCode != 429 || a.Parameters.RetryAfter < 1 {
		t.Fatalf("second in chat 1: %+v", a)
	}
	if a := send("2"); !a.OK {
		t.Fatalf("chat 2: %+v", a)
	}
	if a := call(t, s, "sendChatAction", url.Values{"chat_id": {"3"}, "action": {"typing"}}); !a.OK {
		t.Fatalf("action: %+v", a)
	}
	if a := send("4"); a.ErrorCode != 429 {
		t.Fatalf("fourth request within a second: %+v", a)
	}
	if s.RateLimited() != 2 {
		t.Fatalf("TooMany = %d, want 2", s.RateLimited())
	}
}

func TestLongPollingAndOffset(t *testing.T) {
	s := New(t, Options{})
	u := User{ID: 42, Username: "ann"}
	type upd struct {
		UpdateID int64 `json:"update_id"`
		Message  struct {
			Text     string `json:"text"`
			Entities []struct {
				Type   string `json:"type"`
				Offset int    `json:"offset"`
			} `json:"entities"`
		} `json:"message"`
	}
	got := make(chan []upd, 1)
	go func() {
		resp, err := http.PostForm(s.URL+"/bot"+s.Token()+"/getUpdates", url.Values{"timeout": {"30"}})
		if err != nil {
			got <- nil
			return
		}
		defer resp.Body.Close()
		var a struct{ Result []upd }
		_ = json.NewDecoder(resp.Body).Decode(&a)
		got <- a.Result
	}()
	s.WaitUntil(t, 5*time.Second, "the poll", func() bool { return len(s.Calls("getUpdates")) == 1 })
	p := s.Push(Incoming{Chat: -7, From: u, Text: "😀 @golem_bot hi"})
	var first []upd
	select {
	case first = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting poll was not answered by a push")
	}
	if len(first) != 1 || first[0].UpdateID != p.UpdateID || len(first[0].Message.Entities) != 1 || first[0].Message.Entities[0].Offset != 3 {
		t.Fatalf("poll answered %+v", first)
	}
	s.PushPrivate(u, "second")
	var a struct{ Result []upd }
	_ = json.Unmarshal(call(t, s, "getUpdates", url.Values{"offset": {"0"}}).Result, &a.Result)
	if len(a.Result) != 2 {
		t.Fatalf("without offset got %d updates, want both", len(a.Result))
	}
	_ = json.Unmarshal(call(t, s, "getUpdates", url.Values{"offset": {"1002"}}).Result, &a.Result)
	if len(a.Result) != 1 || a.Result[0].Message.Text != "second" {
		t.Fatalf("with offset got %+v", a.Result)
	}
}

func TestFilesAndDrafts(t *testing.T) {
	s := New(t, Options{})
	u := User{ID: 42}
	s.PushDocument(42, u, "see", "a.txt", []byte("hello"))
	a := call(t, s, "getFile", url.Values{"file_id": {"F1"}})
	var f struct {
		FilePath string `json:"file_path"`
	}
	_ = json.Unmarshal(a.Result, &f)
	resp, err := http.Get(s.URL + "/file/bot" + s.Token() + "/" + f.FilePath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "hello" {
		t.Fatalf("download = %q", body)
	}
	if a := call(t, s, "sendMessageDraft", url.Values{"chat_id": {"42"}, "draft_id": {"1"}, "text": {"dr"}}); !a.OK {
		t.Fatalf("draft: %+v", a)
	}
	if a := call(t, s, "sendMessageDraft", url.Values{"chat_id": {"-5"}, "draft_id": {"1"}, "text": {"dr"}}); a.OK {
		t.Fatal("a draft to a group was accepted")
	}
	if d := s.Drafts(42); len(d) != 1 || d[0] != "dr" {
		t.Fatalf("drafts = %q", d)
	}
}

func TestParseHTML(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{`<b>a</b> &lt;&gt;&amp;&quot;&#65;&#x42;`, `a <>&"AB`, true},
		{`<pre><code class="language-go">x</code></pre>`, "x", true},
		{`<a href="https://x.y/?a=1&amp;b=2"><b>l</b></a>`, "l", true},
		{`<blockquote>q <i>i</i></blockquote>`, "q i", true},
		{`<code class="language-go">x</code>`, "", false},
		{`<b>a`, "", false},
		{`<b>a</i>`, "", false},
		{`<p>a</p>`, "", false},
		{`<code><b>a</b></code>`, "", false},
		{`<a href="x"><code>c</code></a>`, "", false},
		{`<blockquote><blockquote>a</blockquote></blockquote>`, "", false},
		{`a & b`, "", false},
		{`a > b`, "", false},
	}
	for _, tt := range tests {
		got, err := ParseHTML(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseHTML(%q) = %q, %v; want %q ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// clock is a time a test steps by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) step(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func TestFloodModel(t *testing.T) {
	c := &clock{now: time.Unix(1_700_000_000, 0)}
	s := New(t, Options{EnforceRates: true, GlobalPerSecond: 4, Clock: c.Now})
	send := func(chat string) answer {
		return call(t, s, "sendMessage", url.Values{"chat_id": {chat}, "text": {"x"}})
	}
	edit := func(chat, text string) answer {
		return call(t, s, "editMessageText", url.Values{"chat_id": {chat}, "message_id": {"1"}, "text": {text}})
	}
	if a := send("1"); !a.OK {
		t.Fatalf("first send: %+v", a)
	}
	// Sends and edits share one token a second, burst 1.
	c.step(900 * time.Millisecond)
	if a := edit("1", "y"); a.ErrorCode != 429 || a.Parameters.RetryAfter != 1 {
		t.Fatalf("an edit 0.9 s after a send: %+v", a)
	}
	// The refusal holds the chat for retry_after from when it was given,
	// though the bucket refills meanwhile.
	c.step(500 * time.Millisecond)
	if a := send("1"); a.ErrorCode != 429 || a.Parameters.RetryAfter != 1 {
		t.Fatalf("a send during the refusal: %+v", a)
	}
	c.step(500 * time.Millisecond)
	if a := edit("1", "y"); !a.OK {
		t.Fatalf("an edit once retry_after passed: %+v", a)
	}
	// The bot's budget: 4 a second, burst 4, over all chats.
	for i := range 3 {
		if a := send(strconv.Itoa(10 + i)); !a.OK {
			t.Fatalf("send %d to another chat: %+v", i, a)
		}
	}
	if a := send("20"); a.ErrorCode != 429 {
		t.Fatalf("a fifth call within a quarter second: %+v", a)
	}
	c.step(250 * time.Millisecond)
	if a := send("20"); !a.OK {
		t.Fatalf("after a token refilled: %+v", a)
	}
	// A scripted failure is answered past the limits: it took its tokens.
	c.step(time.Second)
	s.Fail("sendMessage", 1, Failure{Code: 500, Desc: "Internal Server Error"})
	if a := send("1"); a.ErrorCode != 500 {
		t.Fatalf("the scripted failure: %+v", a)
	}
	c.step(500 * time.Millisecond)
	if a := send("1"); a.ErrorCode != 429 {
		t.Fatalf("a retry half a second after a 500: %+v", a)
	}
	if s.RateLimited() != 4 {
		t.Fatalf("TooMany = %d, want 4", s.RateLimited())
	}
	var limited []string
	for _, c := range s.Calls("") {
		if c.Limited {
			limited = append(limited, c.Method+" "+c.Params.Get("chat_id"))
		}
	}
	if want := []string{"editMessageText 1", "sendMessage 1", "sendMessage 20", "sendMessage 1"}; !slices.Equal(limited, want) {
		t.Fatalf("calls marked limited: %q, want %q", limited, want)
	}
}

func TestGroupsHoldTwentyAMinute(t *testing.T) {
	c := &clock{now: time.Unix(1_700_000_000, 0)}
	s := New(t, Options{EnforceRates: true, Clock: c.Now})
	for i := range 20 {
		if a := call(t, s, "sendMessage", url.Values{"chat_id": {"-5"}, "text": {"x"}}); !a.OK {
			t.Fatalf("group message %d: %+v", i, a)
		}
		c.step(time.Second)
	}
	a := call(t, s, "sendMessage", url.Values{"chat_id": {"-5"}, "text": {"x"}})
	if a.ErrorCode != 429 || a.Parameters.RetryAfter != 40 { // the first leaves the minute in 40 s
		t.Fatalf("the 21st message within a minute: %+v", a)
	}
	if m := s.BotMessages(-5); len(m) != 20 || !m[19].At.Equal(c.Now().Add(-time.Second)) {
		t.Fatalf("%d messages, the last at %v", len(m), m[len(m)-1].At)
	}
}

func TestRepliesShowTheRepliedMessageAsTheBotAPIDoes(t *testing.T) {
	s := New(t, Options{})
	bob := User{ID: 7, Username: "bob", FirstName: "Bob", LastName: "Stone"}
	ann := User{ID: 42, FirstName: "Ann"}
	photo := s.Push(Incoming{Chat: -9, From: bob, Text: "the failing step, see @carol", Photo: []byte("JPEG")})
	reply := s.PushReply(-9, ann, photo.MessageID, "and now?")
	bot := call(t, s, "sendMessage", url.Values{"chat_id": {"-9"}, "text": {"<b>fixed</b> it"}, "parse_mode": {"HTML"}, "reply_to_message_id": {strconv.FormatInt(reply.MessageID, 10)}})
	var sent struct {
		MessageID int64 `json:"message_id"`
	}
	_ = json.Unmarshal(bot.Result, &sent)
	s.PushQuote(-9, ann, sent.MessageID, "it", "really?")

	type msg struct {
		MessageID int64 `json:"message_id"`
		From      struct {
			ID        int64  `json:"id"`
			IsBot     bool   `json:"is_bot"`
			FirstName string `json:"first_name"`
			LastName  string `json:"last_name"`
			Username  string `json:"username"`
		} `json:"from"`
		Text            string            `json:"text"`
		Caption         string            `json:"caption"`
		CaptionEntities []json.RawMessage `json:"caption_entities"`
		Photo           []json.RawMessage `json:"photo"`
		Reply           json.RawMessage   `json:"reply_to_message"`
		Quote           *struct {
			Text     string `json:"text"`
			Position int    `json:"position"`
			IsManual bool   `json:"is_manual"`
		} `json:"quote"`
	}
	var a struct {
		Result []struct {
			Message msg `json:"message"`
		}
	}
	_ = json.Unmarshal(call(t, s, "getUpdates", url.Values{}).Result, &a.Result)
	if len(a.Result) != 3 {
		t.Fatalf("%d updates, want 3", len(a.Result))
	}
	var r msg
	if err := json.Unmarshal(a.Result[1].Message.Reply, &r); err != nil {
		t.Fatalf("the reply carries no reply_to_message: %v", err)
	}
	if r.MessageID != photo.MessageID || r.From.ID != 7 || r.From.FirstName != "Bob" || r.From.LastName != "Stone" || r.From.Username != "bob" ||
		r.Caption != "the failing step, see @carol" || len(r.CaptionEntities) != 1 || len(r.Photo) != 2 || r.Text != "" {
		t.Errorf("reply_to_message is not the replied message as sent: %+v", r)
	}
	var q msg
	_ = json.Unmarshal(a.Result[2].Message.Reply, &q)
	if q.MessageID != sent.MessageID || !q.From.IsBot || q.From.ID != s.BotID() || q.Text != "fixed it" || q.Reply != nil {
		t.Errorf("a reply to the bot's answer shows %+v (its own reply must not be nested)", q)
	}
	if qt := a.Result[2].Message.Quote; qt == nil || qt.Text != "it" || qt.Position != 6 || !qt.IsManual {
		t.Errorf("quote = %+v, want the quoted part at UTF-16 offset 6", qt)
	}
	if a.Result[1].Message.Quote != nil {
		t.Errorf("a reply without a quote has one: %+v", a.Result[1].Message.Quote)
	}
}

func TestSentMessagesNameWhomTheyNotify(t *testing.T) {
	s := New(t, Options{})
	for _, tc := range []struct{ text, mode, want string }{
		{"hi @bob and @carol_x", "", "@bob @carol_x"},
		{"hi @\u2060bob", "", ""},
		{"mail ann@bob.com", "", ""},
		{`see <a href="tg://user?id=77">Ann</a> and @dan`, "HTML", "@dan tg://user?id=77"},
		{`<a href="tg://user?id=77">Ann</a>`, "", ""}, // plain text: no link
	} {
		a := call(t, s, "sendMessage", url.Values{"chat_id": {"-3"}, "text": {tc.text}, "parse_mode": {tc.mode}})
		if !a.OK {
			t.Fatalf("sendMessage %q: %+v", tc.text, a)
		}
		msgs := s.BotMessages(-3)
		if got := strings.Join(msgs[len(msgs)-1].Mentions, " "); got != tc.want {
			t.Errorf("%q notifies %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestPrivacyModeDeliversOnlyWhatIsForTheBot(t *testing.T) {
	s := New(t, Options{PrivacyMode: true})
	bob := User{ID: 7, FirstName: "Bob"}
	chatter := s.PushGroup(-4, bob, "just chatting with @carol")
	bot := call(t, s, "sendMessage", url.Values{"chat_id": {"-4"}, "text": {"an answer"}})
	var sent struct {
		MessageID int64 `json:"message_id"`
	}
	_ = json.Unmarshal(bot.Result, &sent)
	for _, tc := range []struct {
		p    Pushed
		want bool
	}{
		{chatter, false},
		{s.PushGroup(-4, bob, "hey @Golem_Bot look"), true},
		{s.PushGroup(-4, bob, "/status"), true},
		{s.PushGroup(-4, bob, "/status@golem_bot"), true},
		{s.PushGroup(-4, bob, "/status@other_bot"), false},
		{s.PushReply(-4, bob, sent.MessageID, "thanks"), true},
		{s.PushReply(-4, bob, chatter.MessageID, "me too"), false},
		{s.PushPrivate(bob, "hello"), true},
	} {
		if got := tc.p.UpdateID != 0; got != tc.want {
			t.Errorf("message %d delivered = %v, want %v", tc.p.MessageID, got, tc.want)
		}
	}
	if n := len(s.Messages(-4)); n != 8 {
		t.Errorf("%d messages in the group, want every one posted (8)", n)
	}
	var a struct{ Result []json.RawMessage }
	_ = json.Unmarshal(call(t, s, "getUpdates", url.Values{}).Result, &a.Result)
	if len(a.Result) != 5 {
		t.Errorf("%d updates, want 5", len(a.Result))
	}
}

func TestSetMessageReaction(t *testing.T) {
	s := New(t, Options{})
	in := s.PushPrivate(User{ID: 42, FirstName: "Ann"}, "hi")
	call := func(params url.Values) (int, string) {
		params.Set("chat_id", "42")
		resp, err := http.PostForm(s.URL+"/bot"+s.Token()+"/setMessageReaction", params)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			OK   bool   `json:"ok"`
			Desc string `json:"description"`
		}
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out.Desc
	}
	id := strconv.FormatInt(in.MessageID, 10)
	cases := []struct {
		params url.Values
		code   int
		desc   string
	}{
		{url.Values{"message_id": {"999"}, "reaction": {`[{"type":"emoji","emoji":"👀"}]`}}, 400, "Bad Request: message to react not found"},
		{url.Values{"message_id": {id}, "reaction": {`[{"type":"emoji","emoji":"🦀"}]`}}, 400, "Bad Request: REACTION_INVALID"},
		{url.Values{"message_id": {id}, "reaction": {`[{"type":"emoji","emoji":"👀"},{"type":"emoji","emoji":"👍"}]`}}, 400, "Bad Request: REACTIONS_TOO_MANY"},
		{url.Values{"message_id": {id}, "reaction": {`{`}}, 400, "Bad Request: can't parse reaction types JSON object"},
		{url.Values{"message_id": {id}, "reaction": {`[{"type":"emoji","emoji":"👀"}]`}}, 200, ""},
	}
	for _, c := range cases {
		if code, desc := call(c.params); code != c.code || desc != c.desc {
			t.Errorf("%v: %d %q, want %d %q", c.params, code, desc, c.code, c.desc)
		}
	}
	if m := s.Messages(42)[0]; len(m.Reactions) != 1 || m.Reactions[0] != "👀" {
		t.Errorf("reactions %v, want 👀", m.Reactions)
	}
}

// A second long poll of the bot ends the one waiting with 409 Conflict and
// waits in its place; a third within 3 s ends the second, whose 409 is
// held 3 s first, as the Bot API throttles them.
func TestSecondLongPollEndsTheFirstWithConflict(t *testing.T) {
	s := New(t, Options{})
	poll := func() <-chan answer {
		ch := make(chan answer, 1)
		go func() { ch <- call(t, s, "getUpdates", url.Values{"timeout": {"20"}}) }()
		return ch
	}
	waitPolls := func(n int) {
		s.WaitUntil(t, 5*time.Second, "the poll", func() bool { return len(s.Calls("getUpdates")) == n })
	}
	first := poll()
	waitPolls(1)
	second := poll()
	waitPolls(2)
	select {
	case a := <-first:
		if a.OK || a.ErrorCode != 409 || a.Description != Conflict {
			t.Fatalf("the first poll was answered %+v, want 409 %q", a, Conflict)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the first poll was not ended by the second")
	}
	start := time.Now()
	third := poll()
	waitPolls(3)
	a := <-second
	if a.ErrorCode != 409 {
		t.Fatalf("the second poll was answered %+v", a)
	}
	if held := time.Since(start); held < 2500*time.Millisecond {
		t.Fatalf("a second 409 within 3 s was answered after %v, not held 3 s", held)
	}
	p := s.PushPrivate(User{ID: 9, Username: "u"}, "hi")
	a = <-third
	var got []struct {
		UpdateID int64 `json:"update_id"`
	}
	_ = json.Unmarshal(a.Result, &got)
	if !a.OK || len(got) != 1 || got[0].UpdateID != p.UpdateID {
		t.Fatalf("the last poll was answered %+v", a)
	}
	if n := s.Conflicts(); n != 2 {
		t.Fatalf("Conflicts() = %d, want 2", n)
	}
}

// TestInlineKeyboardChecked: as Telegram, a button's callback_data over 64
// bytes is refused, one of 64 is taken.
func TestInlineKeyboardChecked(t *testing.T) {
	s := New(t, Options{})
	markup := func(data string) string {
		return `{"inline_keyboard":[[{"text":"Continue","callback_data":"` + data + `"}]]}`
	}
	if a := call(t, s, "sendMessage", url.Values{"chat_id": {"5"}, "text": {"x"}, "reply_markup": {markup(strings.Repeat("d", 65))}}); a.OK || !strings.Contains(a.Description, "BUTTON_DATA_INVALID") {
		t.Errorf("65 bytes of callback_data: %+v", a)
	}
	if a := call(t, s, "sendMessage", url.Values{"chat_id": {"5"}, "text": {"x"}, "reply_markup": {markup(strings.Repeat("d", 64))}}); !a.OK {
		t.Errorf("64 bytes of callback_data: %+v", a)
	}
}
