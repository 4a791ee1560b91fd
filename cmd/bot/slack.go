package main

import (
	"github.com/golem-chat/golem/adapters/slack"
	"github.com/golem-chat/golem/core"
)

func init() {
	remotePlatforms = append(remotePlatforms, remotePlatform{name: "slack", build: func(a *app) (core.Adapter, error) {
		c := a.cfg.Slack
		if c.BotToken == "" || c.AppToken == "" {
			if c.BotToken != "" || c.AppToken != "" {
				a.log.Warn("slack needs both bot_token and app_token; it stays off")
			}
			return nil, nil
		}
		return slack.New(slack.Options{BotToken: c.BotToken, AppToken: c.AppToken, APIURL: c.APIURL, Inbox: a.inbox(), Logger: a.log})
	}})
}
