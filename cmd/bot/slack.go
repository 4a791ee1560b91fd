package main

import (
	"context"
	"time"

	"github.com/golem-chat/golem/adapters/slack"
	"github.com/golem-chat/golem/config"
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
		return slack.New(slack.Options{BotToken: c.BotToken, AppToken: c.AppToken, APIURL: c.APIURL, Streaming: c.Streaming,
			ToolActivity: c.ToolActivity, SuggestedPrompts: c.SuggestedPrompts,
			Inbox: a.inbox(), State: a.store, JournalKey: a.member.journalKey("slack.pending"), JournalOf: a.member.journalOf("slack.pending"),
			Replica: a.member.replica,
			Logger:  a.log})
	}})
}

func init() {
	platformChecks = append(platformChecks, platformCheck{name: "slack", check: func(ctx context.Context, cfg config.Config, probe time.Duration) finding {
		c := cfg.Slack
		switch {
		case c.BotToken == "" && c.AppToken == "":
			return finding{"slack", note, "off: no token configured"}
		case c.BotToken == "" || c.AppToken == "":
			return finding{"slack", fail, "needs both slack.bot_token (xoxb-) and slack.app_token (xapp-, with connections:write); set the missing one or clear both"}
		}
		ctx, cancel := context.WithTimeout(ctx, probe)
		defer cancel()
		who, err := slack.Check(ctx, c)
		if err != nil {
			return finding{"slack", fail, platformFix(err, slack.ErrTokenRefused, "copy a valid token from the app's settings at api.slack.com/apps")}
		}
		return finding{"slack", pass, who}
	}})
}
