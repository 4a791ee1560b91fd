package discord

import (
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"
)

func TestPlainSpellsMarkupAsNames(t *testing.T) {
	msg := &discordgo.Message{
		Mentions:        []*discordgo.User{{ID: "1", Username: "ann", GlobalName: "Ann"}, {ID: "2", Username: "bob"}, {ID: "3", Username: "<@4> @here"}},
		MentionChannels: []*discordgo.Channel{{ID: "9", Name: "general"}},
	}
	var nicks nicknames
	name := func(u *discordgo.User) string { return nicks.name("g", u) }
	for _, tt := range []struct{ in, want string }{
		{"hi <@1> and <@!2>", "hi @Ann and @bob"},
		{"<@77> is not listed", "@user is not listed"},
		{"<@&5> role", "@role role"},
		{"in <#9> and <#10>", "in #general and #channel"},
		{"<:party:123> <a:spin:456>", ":party: :spin:"},
		{"at <t:0> or <t:1700000000:R>", "at 1970-01-01 00:00 UTC or 2023-11-14 22:13 UTC"},
		{"run </deploy:42>", "run /deploy"},
		{"@everyone and @here", "@\u200beveryone and @\u200bhere"},
		{"<@3>", "@<\u200b@4> @\u200bhere"},
		{"<@abc> <@> a < b", "<@abc> <@> a < b"},
	} {
		if got := plain(tt.in, msg, name); got != tt.want {
			t.Errorf("plain(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := plain("<@1> @everyone", nil, name); got != "@user @\u200beveryone" {
		t.Errorf("plain without a message = %q", got)
	}
}

// FuzzPlain: whatever the chat says, plain leaves no markup that
// addresses anyone and no bare @everyone or @here.
func FuzzPlain(f *testing.F) {
	for _, s := range []string{"<@1>", "<@!1> <@&2> <#3>", "@everyone", "<<@1>@1>>", "<t:99999999999999:R>", "</a b:1>", "<a:x:1>"} {
		f.Add(s, "<@1>@here")
	}
	f.Fuzz(func(t *testing.T, text, mentioned string) {
		msg := &discordgo.Message{Mentions: []*discordgo.User{{ID: "1", Username: mentioned}}, MentionChannels: []*discordgo.Channel{{ID: "3", Name: mentioned}}}
		got := plain(text, msg, func(u *discordgo.User) string { return u.Username })
		if loc := mentionSyntax.FindStringIndex(got); loc != nil && strings.HasPrefix(got[loc[0]:], "<@") {
			t.Errorf("plain(%q) = %q still mentions someone", text, got)
		}
		for _, mass := range []string{"@everyone", "@here"} {
			if strings.Contains(got, mass) {
				t.Errorf("plain(%q) = %q holds %s", text, got, mass)
			}
		}
	})
}
