package discord

import (
	"strings"
	"testing"

	"github.com/golem-chat/golem/adapters/discord/discordtest"
)

// Files the agent leaves in outbox/ are attachments (multipart) in the
// answer's thread; a file over the cap gets a note there instead.
func TestOutboxFilesAreAttachedInTheAnswersThread(t *testing.T) {
	w := newWorld(t, discordtest.Options{}, Options{MaxUpload: 100})
	id := w.ask("u1", "c1", "!write outbox/report.txt the report\n!write outbox/huge.bin "+strings.Repeat("x", 101)+"\nattached")
	orig := w.original(t, id, "echo: attached")
	var file discordtest.File
	var note string
	if !w.fake.Wait(wait, func(v discordtest.View) bool {
		m, _ := v.Message(orig.ID)
		if m.Thread == "" {
			return false
		}
		for _, tm := range v.Messages(m.Thread) {
			if len(tm.Files) == 1 {
				file = tm.Files[0]
			}
			if strings.Contains(tm.Content, "huge.bin") {
				note = tm.Content
			}
		}
		return file.Name != "" && note != ""
	}) {
		t.Fatalf("no attachment and note in the answer's thread; calls %+v", w.fake.Calls(""))
	}
	if file.Name != "report.txt" || string(file.Data) != "the report" {
		t.Errorf("attached %+v", file)
	}
	if !strings.Contains(note, "(101 bytes) is over the 100 bytes") {
		t.Errorf("the file over the cap got %q", note)
	}
	if n := len(w.fake.Messages("c1")); n != 1 {
		t.Errorf("channel c1 has %d messages, want only the answer", n)
	}
	checkNoPings(t, w.fake)
}
