package slack

import (
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/slack/slacktest"
)

// Files the agent leaves in outbox/ are shared with files upload v2 in the
// answer's thread; a file over the cap gets a note there instead.
func TestE2EOutboxFilesAreUploadedInTheAnswersThread(t *testing.T) {
	b := newE2E(t, botConfig{edit: func(o *Options) { o.MaxUpload = 100 }})
	d := b.say(slacktest.Event{Channel: "C1", Text: mention + " !write outbox/report.txt the report\n!write outbox/huge.bin " +
		strings.Repeat("x", 101) + "\nhere it is"})
	ans := b.answer("C1", d.TS, "echo: here it is")
	var note slacktest.Message
	if !b.fake.Wait(30*time.Second, func() bool {
		for _, m := range b.fake.BotMessages("C1") {
			if strings.Contains(m.Text, "huge.bin") {
				note = m
			}
		}
		return len(b.fake.Uploads()) == 1 && note.TS != ""
	}) {
		t.Fatalf("uploads %+v, messages %+v", b.fake.Uploads(), b.fake.BotMessages("C1"))
	}
	up := b.fake.Uploads()[0]
	if up.Name != "report.txt" || string(up.Content) != "the report" || up.Channel != "C1" || up.ThreadTS != ans.TS {
		t.Errorf("upload %+v, want report.txt in the answer's thread %s", up, ans.TS)
	}
	for _, m := range []string{"files.getUploadURLExternal", "files.upload", "files.completeUploadExternal"} {
		if n := len(b.fake.Calls(m)); n != 1 {
			t.Errorf("%s called %d times, want once", m, n)
		}
	}
	if note.ThreadTS != ans.TS || !strings.Contains(note.Text, "(101 bytes) is over the 100 bytes") {
		t.Errorf("the file over the cap got %+v", note)
	}
}
