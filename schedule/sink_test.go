package schedule_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/bottest"
	"github.com/golem-chat/golem/parser"
	"github.com/golem-chat/golem/schedule"
)

// TestCommandsFromAStream: from a source that answers on each message's
// Sink and was registered neither as a Poster nor as a core.Prompter,
// /schedules and the commands that take an id work, and /every is refused
// in one line: its runs could go nowhere.
func TestCommandsFromAStream(t *testing.T) {
	bot := bottest.New(t, bottest.Options{Trusted: []string{"http"}, Tune: func(o *core.Options) {
		o.Schedules = schedule.New(schedule.Options{Store: o.Store})
	}})
	say := func(text string) string {
		var mu sync.Mutex
		var got strings.Builder
		done := make(chan struct{})
		bot.Dispatcher.Handle(context.Background(), core.Message{Platform: "http", Channel: "c1", User: "http", Text: text,
			Sink: func(evs ...parser.Event) {
				mu.Lock()
				defer mu.Unlock()
				for _, ev := range evs {
					got.WriteString(ev.Content + ev.Message)
					if ev.Terminal() {
						close(done)
					}
				}
			}})
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("no answer to %s", text)
		}
		mu.Lock()
		defer mu.Unlock()
		return got.String()
	}
	if a := say(`/every @daily p`); !strings.Contains(a, "nothing can be posted here (http)") || strings.Contains(a, "\n") {
		t.Errorf("/every from the HTTP API: %q", a)
	}
	if a := say(`/schedules`); !strings.Contains(a, "No schedules") {
		t.Errorf("/schedules: %q", a)
	}
	if a := say(`/pause x1`); !strings.Contains(a, "no schedule `x1` in this conversation") {
		t.Errorf("/pause: %q", a)
	}
	if all, _ := bot.Store.AllSchedules(); len(all) != 0 {
		t.Errorf("saved %+v", all)
	}
}
