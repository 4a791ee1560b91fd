package main

import (
	"github.com/golem-chat/golem/adapters/discord"
	"github.com/golem-chat/golem/core"
)

func init() {
	remotePlatforms = append(remotePlatforms, remotePlatform{name: "discord", build: func(a *app) (core.Adapter, error) {
		c := a.cfg.Discord
		if c.Token == "" {
			return nil, nil
		}
		return discord.New(discord.Options{Token: c.Token, APIURL: c.APIURL, Guilds: c.Guilds, Inbox: a.inbox(), Logger: a.log})
	}})
}
