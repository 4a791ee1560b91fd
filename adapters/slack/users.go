package slack

import (
	"context"
	"regexp"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/golem-chat/golem/internal/retry"
)

// How long a user's name is remembered: a name learned for an hour, a
// refusal (no users:read, an unknown user) for ten minutes, so that a
// missing scope costs one users.info per author now and then, not one per
// message.
const (
	nameTTL    = time.Hour
	noNameTTL  = 10 * time.Minute
	maxNames   = 10000 // the cache is cleared when it holds more
	nameCalls  = 4     // users.info calls at once for one History
	mentionRef = `<@([UW][A-Z0-9]+)>`
)

// userNames caches users' display names by id. It is safe for concurrent
// use.
type userNames struct {
	mu sync.Mutex
	m  map[string]cachedName
}

type cachedName struct {
	name  string // "" when Slack refused to tell
	until time.Time
}

// get returns the cached name of id; ok is false when it must be asked.
func (u *userNames) get(id string, now time.Time) (name string, ok bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	c, ok := u.m[id]
	if !ok || now.After(c.until) {
		return "", false
	}
	return c.name, true
}

func (u *userNames) put(id, name string, ttl time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil || len(u.m) >= maxNames {
		u.m = map[string]cachedName{}
	}
	u.m[id] = cachedName{name: name, until: time.Now().Add(ttl)}
}

// mentionedUser matches an unlabelled user mention, whose name must be
// asked for.
var mentionedUser = regexp.MustCompile(mentionRef)

// names returns the display names of the authors of msgs and of the users
// their texts mention, by id: from the cache, else one users.info per
// distinct user, a few at once. A name Slack does not tell is "" (the id
// stands in for it). The bot is named as auth.test named it.
func (a *Adapter) names(ctx context.Context, msgs []slackapi.Message, botUser string) map[string]string {
	names := map[string]string{}
	if botUser != "" {
		names[botUser] = a.botName()
	}
	var ask []string
	want := func(id string) {
		if _, seen := names[id]; seen || id == "" {
			return
		}
		if name, ok := a.users.get(id, time.Now()); ok {
			names[id] = name
			return
		}
		names[id] = ""
		ask = append(ask, id)
	}
	for _, msg := range msgs {
		if msg.BotID == "" {
			want(msg.User)
		}
		for _, sub := range mentionedUser.FindAllStringSubmatch(msg.Text, -1) {
			want(sub[1])
		}
	}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		slot = make(chan struct{}, nameCalls)
	)
	for _, id := range ask {
		wg.Go(func() {
			slot <- struct{}{}
			defer func() { <-slot }()
			name := a.userName(ctx, id)
			mu.Lock()
			names[id] = name
			mu.Unlock()
		})
	}
	wg.Wait()
	return names
}

// userName asks Slack for one user's display name (users.info), falling
// back to the real name and the user name, and caches the answer.
func (a *Adapter) userName(ctx context.Context, id string) string {
	var u *slackapi.User
	err := a.do(ctx, "users.info", func(ctx context.Context) error {
		var err error
		u, err = a.api.GetUserInfoContext(ctx, id)
		return err
	})
	if err != nil {
		if ctx.Err() == nil && verdict(err).Kind == retry.Final {
			a.users.put(id, "", noNameTTL)
		}
		a.log.Warn("slack: read a user's name for the chat context", "user", id, "err", withScopeHint(err))
		return ""
	}
	name := firstNonEmpty(u.Profile.DisplayName, u.Profile.RealName, u.RealName, u.Name)
	a.users.put(id, name, nameTTL)
	return name
}

// botName is the bot's user name as auth.test told it, "golem" before.
func (a *Adapter) botName() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return firstNonEmpty(a.botUserName, "golem")
}
