package main

import (
	"github.com/golem-chat/golem/adapters/telegram"
	"github.com/golem-chat/golem/core"
)

func init() {
	remotePlatforms = append(remotePlatforms, remotePlatform{name: "telegram", build: func(a *app) (core.Adapter, error) {
		c := a.cfg.Telegram
		if c.Token == "" {
			return nil, nil
		}
		return telegram.New(telegram.Options{
			Token: c.Token, APIURL: c.APIURL, Inbox: a.inbox(), State: a.store, Logger: a.log, Drafts: c.Drafts,
		})
	}})
}
