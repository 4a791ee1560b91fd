package discord

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
)

// mentionSyntax matches Discord's markup that addresses or stands for
// something: <@id> and <@!id> (a user), <@&id> (a role), <#id> (a
// channel), </name:id> (a slash command), <:name:id> and <a:name:id> (a
// custom emoji), <t:unix> and <t:unix:style> (a timestamp).
var mentionSyntax = regexp.MustCompile(`<(?:@!?(\d+)|@&(\d+)|#(\d+)|/([^:<>\n]{1,100}):\d+|a?:(\w{1,64}):\d+|t:(-?\d{1,13})(?::[tTdDfFsSR])?)>`)

// plain is a message's text as plain words that address nobody: user
// mentions become "@" and the name that name gives the user among the
// message's mentions ("@user" for one it does not list), roles "@role" (a message names its
// roles only by id), channels "#" and their name where the message carries
// it ("#channel" otherwise), custom emoji ":name:", slash-command mentions
// "/name", timestamps a UTC time; @everyone and @here get a zero-width
// space after the @, as Render spells them. msg may be nil (for a name).
func plain(text string, msg *discordgo.Message, name func(*discordgo.User) string) string {
	out := mentionSyntax.ReplaceAllStringFunc(text, func(tok string) string {
		g := mentionSyntax.FindStringSubmatch(tok)
		switch {
		case g[1] != "":
			if msg != nil {
				for _, u := range msg.Mentions {
					if u != nil && u.ID == g[1] {
						return "@" + inert(name(u))
					}
				}
			}
			return "@user"
		case g[2] != "":
			return "@role"
		case g[3] != "":
			if msg != nil {
				for _, c := range msg.MentionChannels {
					if c != nil && c.ID == g[3] && c.Name != "" {
						return "#" + inert(c.Name)
					}
				}
			}
			return "#channel"
		case g[4] != "":
			return "/" + g[4]
		case g[5] != "":
			return ":" + g[5] + ":"
		case g[6] != "":
			secs, err := strconv.ParseInt(g[6], 10, 64)
			if err != nil {
				return tok
			}
			return time.Unix(secs, 0).UTC().Format("2006-01-02 15:04 UTC")
		}
		return tok
	})
	return breakMassMentions(out)
}

// inert is a name put into a text: markup in it ("<@123>") is broken with
// a zero-width space so that it stands for nothing.
func inert(name string) string {
	return strings.NewReplacer("<@", "<\u200b@", "<#", "<\u200b#", "</", "<\u200b/", "<t:", "<\u200bt:").Replace(name)
}

// breakMassMentions puts a zero-width space after the @ of every @everyone
// and @here.
func breakMassMentions(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	return strings.NewReplacer("@everyone", "@\u200beveryone", "@here", "@\u200bhere").Replace(s)
}
