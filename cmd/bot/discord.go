package main

import (
	"context"
	"time"

	"github.com/golem-chat/golem/adapters/discord"
	"github.com/golem-chat/golem/config"
	"github.com/golem-chat/golem/core"
)

func init() {
	remotePlatforms = append(remotePlatforms, remotePlatform{name: "discord", build: func(a *app) (core.Adapter, error) {
		c := a.cfg.Discord
		if c.Token == "" {
			return nil, nil
		}
		return discord.New(discord.Options{Token: c.Token, APIURL: c.APIURL, Guilds: c.Guilds, Inbox: a.inbox(), State: a.store,
			JournalKey: a.member.journalKey("discord.pending"), JournalOf: a.member.journalOf("discord.pending"),
			Replica: a.member.replica, Logger: a.log})
	}})
}

func init() {
	platformChecks = append(platformChecks, platformCheck{name: "discord", check: func(ctx context.Context, cfg config.Config, probe time.Duration) finding {
		if cfg.Discord.Token == "" {
			return finding{"discord", note, "off: no token configured"}
		}
		ctx, cancel := context.WithTimeout(ctx, probe)
		defer cancel()
		who, err := discord.Check(ctx, cfg.Discord)
		if err != nil {
			return finding{"discord", fail, platformFix(err, discord.ErrTokenRefused, "reset the bot's token in the Discord developer portal (Bot → Reset Token)")}
		}
		return finding{"discord", pass, who}
	}})
}
