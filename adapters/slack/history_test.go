package slack

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/adapters/slack/slacktest"
	"github.com/golem-chat/golem/core"
)

func TestPlainText(t *testing.T) {
	names := map[string]string{"U1": "ann", slacktest.BotUserID: "golem"}
	for in, want := range map[string]string{
		"<@U1> look":                              "@ann look",
		"<@U2|bob> and <@U3>":                     "@bob and @U3",
		"<@" + slacktest.BotUserID + "> hi":       "@golem hi",
		"<!here> <!channel> <!everyone>":          "@here @channel @everyone",
		"<!subteam^S1|@oncall> and <!subteam^S2>": "@oncall and @group",
		"see <#C1|general> and <#C2>":             "see #general and #C2",
		"<https://x.test/a?b=1&amp;c=2|the doc>":  "the doc (https://x.test/a?b=1&c=2)",
		"<https://x.test>":                        "https://x.test",
		"<mailto:a@x.test|a@x.test>":              "a@x.test",
		"<!date^1392734382^{date}|Feb 18>":        "Feb 18",
		"1 &lt; 2 &amp;&amp; 3 &gt; 2":            "1 < 2 && 3 > 2",
		"&lt;@U1&gt; typed as text":               "<@U1> typed as text",
	} {
		if got := plainText(in, names); got != want {
			t.Errorf("plainText(%q) = %q, want %q", in, got, want)
		}
	}
}

// contextFake starts an adapter against a fake that knows Ann (U1), Bob
// (U2, who set no display name) and Cy (U3).
func contextFake(t *testing.T) (*slacktest.Server, *Adapter) {
	t.Helper()
	fake, a, _ := startAdapter(t, slacktest.Options{}, nil)
	fake.AddUser(slacktest.User{ID: "U1", Name: "ann", RealName: "Ann Smith", DisplayName: "ann"})
	fake.AddUser(slacktest.User{ID: "U2", Name: "bob", RealName: "Bob Jones"})
	fake.AddUser(slacktest.User{ID: "U3", Name: "cy", RealName: "Cy Young", DisplayName: "cy"})
	return fake, a
}

// say stores a user's (or with user "bot", the bot's) message in channel.
func said(fake *slacktest.Server, channel, thread, user, text string) string {
	m := slacktest.Message{Channel: channel, ThreadTS: thread, User: user, Text: text}
	if user == "bot" {
		m.User, m.BotID = slacktest.BotUserID, slacktest.BotID
	}
	return fake.AddMessage(m).TS
}

func history(t *testing.T, a *Adapter, m core.Message, limit int) []core.Said {
	t.Helper()
	m.Platform, m.Mentioned = "slack", true
	got, err := a.History(context.Background(), m, limit)
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	return got
}

func TestHistoryOfAThread(t *testing.T) {
	fake, a := contextFake(t)
	f := fake.AddFile("deploy.log", "text/plain", []byte("log"))
	parent := said(fake, "C1", "", "U1", "the deploy failed")
	fake.AddMessage(slacktest.Message{Channel: "C1", ThreadTS: parent, User: "U2", Text: "here is the log", Files: []map[string]any{f}})
	said(fake, "C1", "", "U3", "meanwhile at the top of the channel")
	ask := said(fake, "C1", parent, "U1", mention+" what went wrong?")
	said(fake, "C1", parent, "U3", "said after the mention")

	got := history(t, a, core.Message{Channel: "C1", Thread: parent, ID: ask}, 20)
	want := []core.Said{
		{Author: "ann", Text: "the deploy failed"},
		{Author: "Bob Jones", Text: "here is the log", Files: []string{"deploy.log"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("thread context = %+v\nwant %+v", got, want)
	}
	if c := fake.Calls("conversations.replies"); len(c) != 1 || c[0].Args["latest"] != ask || c[0].Args["inclusive"] != "0" || c[0].Args["ts"] != parent {
		t.Errorf("conversations.replies calls = %+v, want one up to the mention, excluded", c)
	}

	// The bot answers; two more messages, a mention: the bot's answer
	// (marked) and what came after it, nothing from before.
	said(fake, "C1", parent, "bot", "It failed in the migration.")
	said(fake, "C1", parent, "U2", "no, it was <#C7|ops> again")
	said(fake, "C1", parent, "U3", "<@U1> agrees")
	ask2 := said(fake, "C1", parent, "U1", mention+" are you sure?")
	got = history(t, a, core.Message{Channel: "C1", Thread: parent, ID: ask2}, 20)
	want = []core.Said{
		{Author: "golem", Bot: true, Text: "It failed in the migration."},
		{Author: "Bob Jones", Text: "no, it was #ops again"},
		{Author: "cy", Text: "@ann agrees"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("thread context after the bot's answer = %+v\nwant %+v", got, want)
	}
	if n := len(fake.Calls("users.info")); n != 3 {
		t.Errorf("%d users.info calls for three distinct users over two reads, want 3 (cached)", n)
	}

	// Nothing since the bot's answer: nothing.
	said(fake, "C1", parent, "bot", "Quite sure.")
	ask3 := said(fake, "C1", parent, "U1", mention+" thanks")
	if got := history(t, a, core.Message{Channel: "C1", Thread: parent, ID: ask3}, 20); len(got) != 0 {
		t.Errorf("a mention right after the bot's answer got context %+v", got)
	}
}

func TestHistoryOfALongThreadKeepsTheNewest(t *testing.T) {
	fake, a := contextFake(t)
	parent := said(fake, "C1", "", "U1", "the parent")
	for i := range 450 {
		said(fake, "C1", parent, "U2", fmt.Sprint("reply ", i))
	}
	ask := said(fake, "C1", parent, "U1", mention+" sum up")
	got := history(t, a, core.Message{Channel: "C1", Thread: parent, ID: ask}, 3)
	var texts []string
	for _, s := range got {
		texts = append(texts, s.Text)
	}
	if want := []string{"reply 447", "reply 448", "reply 449"}; !reflect.DeepEqual(texts, want) {
		t.Errorf("context = %q, want the 3 newest, oldest first: %q", texts, want)
	}
	calls := fake.Calls("conversations.replies")
	if len(calls) != 3 || calls[1].Args["cursor"] == "" || calls[0].Args["limit"] != "200" {
		t.Errorf("conversations.replies calls = %+v, want 3 pages of 200 by cursor", calls)
	}
	if n := len(fake.Calls("users.info")); n != 1 {
		t.Errorf("%d users.info calls for one author, want 1", n)
	}
}

func TestHistoryOfAChannel(t *testing.T) {
	fake, a := contextFake(t)
	said(fake, "C1", "", "U1", "before the bot spoke")
	said(fake, "C1", "", "bot", "my earlier answer")
	top := said(fake, "C1", "", "U2", "<!channel> the build is red")
	said(fake, "C1", top, "U3", "a reply in a thread is not the channel's")
	said(fake, "C1", "", "U3", "since <https://ci.test/1|run 1>")
	said(fake, "C2", "", "U3", "another channel")
	ask := said(fake, "C1", "", "U1", mention+" why?")
	got := history(t, a, core.Message{Channel: "C1", ID: ask}, 20)
	want := []core.Said{
		{Author: "golem", Bot: true, Text: "my earlier answer"},
		{Author: "Bob Jones", Text: "@channel the build is red"},
		{Author: "cy", Text: "since run 1 (https://ci.test/1)"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("channel context = %+v\nwant %+v", got, want)
	}
	c := fake.Calls("conversations.history")
	if len(c) != 1 || c[0].Args["latest"] != ask || c[0].Args["inclusive"] != "0" || c[0].Args["limit"] != "21" {
		t.Errorf("conversations.history calls = %+v, want one page of limit+1 up to the mention, excluded", c)
	}

	// Bounded: the newest only, and no room for the bot's answer.
	got = history(t, a, core.Message{Channel: "C1", ID: ask}, 1)
	if len(got) != 1 || got[0].Author != "cy" {
		t.Errorf("limit 1 = %+v, want the newest message", got)
	}

	// A first mention in a channel, and one right after an earlier
	// mention of the bot (its answer went into a thread): nothing.
	first := said(fake, "C3", "", "U1", mention+" hello")
	if got := history(t, a, core.Message{Channel: "C3", ID: first}, 20); len(got) != 0 {
		t.Errorf("the first message of a channel got context %+v", got)
	}
	second := said(fake, "C3", "", "U2", mention+" and me")
	if got := history(t, a, core.Message{Channel: "C3", ID: second}, 20); len(got) != 0 {
		t.Errorf("a mention right after another got context %+v", got)
	}
}

func TestHistoryWithoutUsersReadNamesByID(t *testing.T) {
	fake, a := contextFake(t)
	fake.SetScopes(strings.Fields("channels:history chat:write reactions:write")...)
	said(fake, "C1", "", "U1", "one")
	said(fake, "C1", "", "U1", "two, for <@U2>")
	ask := said(fake, "C1", "", "U3", mention+" go")
	got := history(t, a, core.Message{Channel: "C1", ID: ask}, 20)
	want := []core.Said{{Author: "U1", Text: "one"}, {Author: "U1", Text: "two, for @U2"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("context without users:read = %+v, want %+v", got, want)
	}
	history(t, a, core.Message{Channel: "C1", ID: ask}, 20)
	if n := len(fake.Calls("users.info")); n != 2 {
		t.Errorf("%d users.info calls, want one per user however often refused", n)
	}
}

func TestHistoryErrors(t *testing.T) {
	fake, a := contextFake(t)
	parent := said(fake, "C1", "", "U1", "a thread")
	ask := said(fake, "C1", parent, "U1", mention+" go")
	fake.SetScopes("chat:write")
	m := core.Message{Platform: "slack", Channel: "C1", Thread: parent, ID: ask}
	if _, err := a.History(context.Background(), m, 20); err == nil || !strings.Contains(err.Error(), "missing_scope") {
		t.Errorf("History without channels:history: %v, want missing_scope", err)
	}
	fake.SetScopes(slacktest.DefaultScopes...)
	fake.Leave("C1")
	m.Thread = ""
	if _, err := a.History(context.Background(), m, 20); err == nil || !strings.Contains(err.Error(), "not_in_channel") {
		t.Errorf("History where the bot is not: %v, want not_in_channel", err)
	}
	if got, err := a.History(context.Background(), core.Message{Platform: "slack", Channel: "D1", ID: ask, DM: true}, 20); got != nil || err != nil {
		t.Errorf("History of a DM = %v, %v", got, err)
	}
}

// A thread too long to read to its end (Slack pages replies oldest first)
// still gives its newest messages: it is read back from the mention in
// windows of time.
func TestHistoryOfAThreadOfMoreThanAThousandReplies(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spacing time.Duration // between replies
	}{
		{"a reply a minute", time.Minute},
		{"a reply a second", time.Second},
		{"a burst", time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake, a := contextFake(t)
			t0 := time.Now().Add(-2000 * tc.spacing)
			at := func(d time.Duration) string { return slackTS(t0.Add(d)) }
			parent := fake.AddMessage(slacktest.Message{Channel: "C1", User: "U1", Text: "the parent", TS: at(0)}).TS
			const n = 1200
			for i := range n {
				fake.AddMessage(slacktest.Message{Channel: "C1", ThreadTS: parent, User: "U2", Text: fmt.Sprint("reply ", i), TS: at(time.Duration(i+1) * tc.spacing)})
			}
			ask := fake.AddMessage(slacktest.Message{Channel: "C1", ThreadTS: parent, User: "U1", Text: mention + " sum up", TS: at((n + 1) * tc.spacing)}).TS
			got := history(t, a, core.Message{Channel: "C1", Thread: parent, ID: ask}, 3)
			var texts []string
			for _, s := range got {
				texts = append(texts, s.Text)
			}
			if want := []string{"reply 1197", "reply 1198", "reply 1199"}; !reflect.DeepEqual(texts, want) {
				t.Errorf("context = %q, want the 3 newest, oldest first: %q", texts, want)
			}
		})
	}
}

// A mention in a group DM gets its context with mpim:history, and without
// it an error that names the scope to add.
func TestHistoryOfAGroupDM(t *testing.T) {
	fake, a := contextFake(t)
	fake.GroupDM("G1")
	said(fake, "G1", "", "U2", "which build broke?")
	ask := said(fake, "G1", "", "U1", mention+" tell us")
	got := history(t, a, core.Message{Channel: "G1", ID: ask}, 20)
	if len(got) != 1 || got[0].Text != "which build broke?" {
		t.Errorf("group DM context = %+v", got)
	}
	fake.SetScopes("chat:write", "groups:history", "users:read")
	_, err := a.History(context.Background(), core.Message{Platform: "slack", Channel: "G1", ID: ask, Mentioned: true}, 20)
	if err == nil || !strings.Contains(err.Error(), "needs the scope mpim:history") {
		t.Errorf("History of a group DM without mpim:history: %v, want the scope named", err)
	}
}

// The bot's quoted message is its answer, not one of the tool-activity
// posts it put after the answer in the same thread.
func TestHistoryQuotesTheAnswerNotTheToolActivity(t *testing.T) {
	fake, a := contextFake(t)
	ctx := context.Background()
	parent := said(fake, "C1", "", "U1", mention+" fix the build")
	ref, err := a.Send(ctx, core.Place{Channel: "C1", Thread: parent, ReplyTo: parent}, "I fixed the import.")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SendActivity(ctx, ref, "📖 Read main.go"); err != nil {
		t.Fatal(err)
	}
	said(fake, "C1", parent, "U2", "it still fails on CI")
	ask := said(fake, "C1", parent, "U1", mention+" look again")
	got := history(t, a, core.Message{Channel: "C1", Thread: parent, ID: ask}, 20)
	want := []core.Said{
		{Author: "golem", Bot: true, Text: "I fixed the import."},
		{Author: "Bob Jones", Text: "it still fails on CI"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("context = %+v\nwant %+v", got, want)
	}
}
