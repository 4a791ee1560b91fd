package telegram

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/golem-chat/golem/core"
)

func texts(said []core.Said) string {
	var out []string
	for _, s := range said {
		out = append(out, s.Author+":"+s.Text)
	}
	return strings.Join(out, " | ")
}

func TestSeenKeepsWhatCameSinceTheLastAnswerInEachPlace(t *testing.T) {
	s := newSeen(DefaultMemory)
	g, topic := place{-1, 0}, place{-1, 9}
	s.saw(g, 1, core.Said{Author: "Bob", Text: "one"})
	s.saw(topic, 2, core.Said{Author: "Bob", Text: "in the topic"})
	s.saw(g, 3, core.Said{Author: "Cy", Text: "two"})
	s.saw(g, 3, core.Said{Author: "Cy", Text: "two"}) // the same update again
	s.saw(g, 6, core.Said{Author: "Cy", Text: "after the question"})
	if got := texts(s.history(g, 5, 20)); got != "Bob:one | Cy:two" {
		t.Errorf("before message 5: %q", got)
	}
	if got := texts(s.history(topic, 5, 20)); got != "Bob:in the topic" {
		t.Errorf("the topic: %q", got)
	}
	s.answered(g, 5) // the answer to message 5
	s.saw(g, 4, core.Said{Author: "Late", Text: "an update still on its way"})
	if got := texts(s.history(g, 8, 20)); got != "Cy:after the question" {
		t.Errorf("after the answer to 5: %q", got)
	}
	if got := texts(s.history(topic, 8, 20)); got != "Bob:in the topic" {
		t.Errorf("an answer in the group forgot the topic: %q", got)
	}
}

func TestTheRepliedMessageIsKeptWithinTheLimitInItsPlace(t *testing.T) {
	s := newSeen(DefaultMemory)
	g := place{-1, 0}
	for i, w := range []string{"a", "b", "c", "d"} {
		s.saw(g, 10+i, core.Said{Author: "Bob", Text: w})
	}
	s.asked(g, 20, 2, core.Said{Author: "Ann", Text: "old"})
	if got := texts(s.history(g, 20, 3)); got != "Ann:old | Bob:c | Bob:d" {
		t.Errorf("limit 3 with an old reply: %q", got)
	}
	if got := texts(s.history(g, 20, 3)); got != "Bob:b | Bob:c | Bob:d" {
		t.Errorf("the replied message is handed out once: %q", got)
	}
	s.asked(g, 21, 11, core.Said{Author: "Bob", Text: "b"})
	if got := texts(s.history(g, 21, 20)); got != "Bob:a | Bob:b | Bob:c | Bob:d" {
		t.Errorf("a reply to a message seen is not repeated: %q", got)
	}
	s.asked(g, 22, 12, core.Said{Author: "Bob", Text: "c"})
	if got := texts(s.history(g, 22, 2)); got != "Bob:c | Bob:d" {
		t.Errorf("limit 2, reply among the newest: %q", got)
	}
	s.asked(g, 23, 10, core.Said{Author: "Bob", Text: "the part quoted of a"})
	if got := texts(s.history(g, 23, 2)); got != "Bob:the part quoted of a | Bob:d" {
		t.Errorf("limit 2, reply to a message seen but older than the limit: %q", got)
	}
}

// TestSeenMemoryIsBounded feeds many groups many messages, some far
// larger than a chat may keep, and checks what stays: the count of bytes,
// and the heap itself (a cut text that still pinned its original, or a
// forgotten chat still referenced, shows there).
func TestSeenMemoryIsBounded(t *testing.T) {
	lim := Memory{Messages: 50, ChatBytes: 16 << 10, TotalBytes: 1 << 20}
	s := newSeen(lim)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	const chats, perChat = 400, 120
	for c := range chats {
		p := place{int64(-1 - c), int64(c % 3)}
		s.asked(p, perChat+1, 1, core.Said{Author: "Ann", Text: strings.Repeat("q", 5000)})
		for i := range perChat {
			text := strings.Repeat("x", 1000)
			if i%40 == 0 || i == perChat-1 {
				text = strings.Repeat("é", 50_000) // 100 KB, over a chat's bytes
			}
			s.saw(p, i+1, core.Said{Author: "Bob", Text: text, Files: []string{"log.txt"}})
		}
		bytes, n := s.retained()
		if bytes > lim.TotalBytes {
			t.Fatalf("after %d chats %d bytes kept, over the total of %d", c+1, bytes, lim.TotalBytes)
		}
		if n > c+1 {
			t.Fatalf("%d chats kept of %d", n, c+1)
		}
	}
	grown := int64(heap()) - int64(before)
	bytes, n := s.retained()
	t.Logf("kept %d bytes counted in %d chats; the heap grew %d bytes", bytes, n, grown)
	if n >= chats || n == 0 {
		t.Errorf("%d of %d chats kept: least recently used ones must go, the newest stay", n, chats)
	}
	if grown > 3*int64(lim.TotalBytes) {
		t.Errorf("the heap grew by %d bytes for %d counted (limit %d)", grown, bytes, lim.TotalBytes)
	}
	last := place{int64(-chats), int64((chats - 1) % 3)}
	got := s.history(last, perChat+1, 1000)
	if len(got) == 0 || len(got) > lim.Messages+1 || got[0].Author != "Ann" {
		t.Fatalf("the newest chat kept %d messages, want its reply and at most %d", len(got), lim.Messages)
	}
	if !strings.HasPrefix(got[len(got)-1].Text, "éé") {
		t.Errorf("the newest chat lost its newest message")
	}
	runtime.KeepAlive(s)
}

func TestSaidNamesAuthorsAndFiles(t *testing.T) {
	a := &Adapter{self: tgbotapi.User{ID: 1, FirstName: "Golem", UserName: "golem_bot"}}
	for _, tc := range []struct {
		name string
		msg  tgbotapi.Message
		want string // Author|Bot|Text|Files
	}{
		{"full name", tgbotapi.Message{From: &tgbotapi.User{ID: 2, FirstName: "Ann", LastName: "Lee", UserName: "ann"}, Text: "hi @bob"},
			"Ann Lee|false|hi @bob|"},
		{"username only", tgbotapi.Message{From: &tgbotapi.User{ID: 3, UserName: "cy"}, Caption: "see", Photo: []tgbotapi.PhotoSize{{}}},
			"@cy|false|see|photo"},
		{"the bot", tgbotapi.Message{From: &tgbotapi.User{ID: 1, IsBot: true, FirstName: "Golem"}, Text: "done"},
			"Golem|true|done|"},
		{"anonymous admin", tgbotapi.Message{From: &tgbotapi.User{ID: 1087968824, IsBot: true, FirstName: "Group", UserName: "GroupAnonymousBot"},
			SenderChat: &tgbotapi.Chat{ID: -5, Title: "Ops"}, Text: "heads up"}, "Ops|false|heads up|"},
		{"media by name or kind", tgbotapi.Message{From: &tgbotapi.User{ID: 4, FirstName: "Dee"},
			Animation: &tgbotapi.Animation{FileName: "fun.gif"}, Document: &tgbotapi.Document{FileName: "fun.gif"}},
			"Dee|false||fun.gif"},
		{"sticker, voice, video note, poll", tgbotapi.Message{From: &tgbotapi.User{ID: 4, FirstName: "Dee"},
			Sticker: &tgbotapi.Sticker{Emoji: "👍"}, Voice: &tgbotapi.Voice{}, VideoNote: &tgbotapi.VideoNote{}, Poll: &tgbotapi.Poll{Question: "Friday?"}},
			"Dee|false||voice message,video message,sticker 👍,poll: Friday?"},
		{"document without a name", tgbotapi.Message{From: &tgbotapi.User{ID: 4, FirstName: "Dee"}, Document: &tgbotapi.Document{}},
			"Dee|false||document"},
	} {
		s := a.said(&tc.msg, "")
		if got := fmt.Sprintf("%s|%v|%s|%s", s.Author, s.Bot, s.Text, strings.Join(s.Files, ",")); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if s := a.said(&tgbotapi.Message{From: &tgbotapi.User{ID: 2, FirstName: "Ann"}, Text: "a long message with a part"}, "a part"); s.Text != "a part" {
		t.Errorf("a quote gives %q, want the part quoted", s.Text)
	}
}

// telegram.memory bounds what is kept: messages per chat as configured,
// none with messages below 0, and a zero field is its default.
func TestSeenKeepsWhatTelegramMemorySays(t *testing.T) {
	g := place{-1, 0}
	for _, tc := range []struct {
		mem  Memory
		want string
	}{
		{Memory{Messages: 2}, "Cy:three | Dan:four"},
		{Memory{Messages: -1}, ""},
		{Memory{}, "Ann:one | Bob:two | Cy:three | Dan:four"},
	} {
		s := newSeen(tc.mem)
		for i, said := range []core.Said{{Author: "Ann", Text: "one"}, {Author: "Bob", Text: "two"}, {Author: "Cy", Text: "three"}, {Author: "Dan", Text: "four"}} {
			s.saw(g, i+1, said)
		}
		if got := texts(s.history(g, 9, 20)); got != tc.want {
			t.Errorf("%+v kept %q, want %q", tc.mem, got, tc.want)
		}
	}
}
