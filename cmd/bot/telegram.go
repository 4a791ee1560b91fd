package main

import (
	"context"
	"time"

	"github.com/golem-chat/golem/adapters/telegram"
	"github.com/golem-chat/golem/config"
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
			Memory: c.Memory, Replica: a.member.replica, // with replicas, one polls at a time
		})
	}})
}

func init() {
	platformChecks = append(platformChecks, platformCheck{name: "telegram", check: func(ctx context.Context, cfg config.Config, probe time.Duration) finding {
		if cfg.Telegram.Token == "" {
			return finding{"telegram", note, "off: no token configured"}
		}
		ctx, cancel := context.WithTimeout(ctx, probe)
		defer cancel()
		who, err := telegram.Check(ctx, cfg.Telegram)
		if err != nil {
			return finding{"telegram", fail, platformFix(err, telegram.ErrTokenRefused, "ask @BotFather for the bot's token (/token)")}
		}
		return finding{"telegram", pass, who}
	}})
}
