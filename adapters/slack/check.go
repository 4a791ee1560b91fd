package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// ErrTokenRefused is wrapped by Check's error when Slack answers that a
// token is not valid (invalid_auth, not_authed, token_revoked, ...).
var ErrTokenRefused = errors.New("token refused")

// Check asks Slack at c.APIURL whether both tokens work, without
// connecting: auth.test with the bot token, then apps.connections.open
// with the app token (which only hands out a socket URL that is never
// dialled). It makes one attempt of each, bounded by ctx, and returns who
// the bot is. Neither the error nor the result ever carries a token.
func Check(ctx context.Context, c Config) (string, error) {
	base := DefaultAPIURL
	if c.APIURL != "" {
		base = apiURL(c.APIURL)
	}
	var who struct {
		Team string `json:"team"`
		User string `json:"user"`
	}
	if err := checkCall(ctx, base, "auth.test", c.BotToken, &who); err != nil {
		return "", keyed("slack.bot_token", err)
	}
	if err := checkCall(ctx, base, "apps.connections.open", c.AppToken, nil); err != nil {
		return "", keyed("slack.app_token", err)
	}
	return fmt.Sprintf("bot %s in workspace %s; the app token opens Socket Mode", who.User, who.Team), nil
}

// keyed names the config key of a refused token; other failures are the
// platform's, not the key's.
func keyed(key string, err error) error {
	if errors.Is(err, ErrTokenRefused) {
		return fmt.Errorf("%s: %w", key, err)
	}
	return fmt.Errorf("slack: %w", err)
}

// checkCall POSTs one Web API method with token and decodes its answer.
func checkCall(ctx context.Context, base, method, token string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+method, strings.NewReader(""))
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err // the URL is the configured one; keep the message short
		}
		return fmt.Errorf("%s: cannot reach %s: %w", method, base, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	var ans struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return fmt.Errorf("%s: HTTP %d, not a Slack answer", method, res.StatusCode)
	}
	switch {
	case ans.OK:
		if into != nil {
			_ = json.Unmarshal(body, into)
		}
		return nil
	case ans.Error == "invalid_auth", ans.Error == "not_authed", ans.Error == "token_revoked",
		ans.Error == "account_inactive", ans.Error == "token_expired", ans.Error == "not_allowed_token_type":
		return fmt.Errorf("%s: %w (%s)", method, ErrTokenRefused, ans.Error)
	default:
		return fmt.Errorf("%s: %s (HTTP %d)", method, ans.Error, res.StatusCode)
	}
}
