package telegram

import (
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/telegram/telegramtest"
)

// Files the agent leaves in outbox/ come back as replies to the answer:
// an image as a photo, anything else as a document, one over the cap as a
// note.
func TestE2EOutboxFilesAreSentAsRepliesToTheAnswer(t *testing.T) {
	st := newStack(t, telegramtest.Options{EnforceRates: true})
	st.opts.MaxUpload = 100
	st.up()
	st.s.PushPrivate(ann, "!write outbox/chart.png PNG\n!write outbox/data.csv a,b\n!write outbox/huge.bin "+
		strings.Repeat("x", 101)+"\nyour files")
	answer := st.waitText(42, "echo: your files")
	note := st.waitText(42, "huge.bin")
	var files []*telegramtest.SentFile
	st.s.WaitUntil(t, 20*time.Second, "two files", func() bool {
		files = files[:0]
		for _, m := range st.s.BotMessages(42) {
			if m.File != nil {
				files = append(files, m.File)
				if m.ReplyTo != answer.ID {
					t.Errorf("%s is a reply to %d, not to the answer %d", m.File.Name, m.ReplyTo, answer.ID)
				}
			}
		}
		return len(files) == 2
	})
	if files[0].Method != "sendPhoto" || files[0].Name != "chart.png" || string(files[0].Data) != "PNG" {
		t.Errorf("the image went as %+v", files[0])
	}
	if files[1].Method != "sendDocument" || files[1].Name != "data.csv" || string(files[1].Data) != "a,b" {
		t.Errorf("the CSV went as %+v", files[1])
	}
	if note.ReplyTo != answer.ID || !strings.Contains(note.Text, "(101 bytes) is over the 100 bytes") {
		t.Errorf("the file over the cap got %+v", note)
	}
	if n := st.s.RateLimited(); n != 0 {
		t.Errorf("the fake answered 429 %d times", n)
	}
}
