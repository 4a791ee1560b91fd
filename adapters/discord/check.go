package discord

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

// ErrTokenRefused is wrapped by Check's error when Discord answers 401.
var ErrTokenRefused = errors.New("token refused")

// Check asks Discord at c.APIURL whether the bot token works (GET
// /users/@me), in one attempt bounded by ctx, and returns the bot's name.
// Neither the error nor the result carries the token.
func Check(ctx context.Context, c Config) (string, error) {
	base := strings.TrimRight(c.APIURL, "/")
	if base == "" {
		base = DefaultAPIURL
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v9/users/@me", nil)
	if err != nil {
		return "", fmt.Errorf("discord: users/@me: bad api_url %q", base)
	}
	req.Header.Set("Authorization", "Bot "+c.Token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return "", fmt.Errorf("discord: users/@me: cannot reach %s: %w", base, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	var me struct {
		Username string `json:"username"`
		Message  string `json:"message"`
	}
	_ = json.Unmarshal(body, &me)
	switch {
	case res.StatusCode == http.StatusOK && me.Username != "":
		return "bot " + me.Username, nil
	case res.StatusCode == http.StatusUnauthorized:
		return "", fmt.Errorf("discord.token: users/@me: %w (%s)", ErrTokenRefused, me.Message)
	default:
		return "", fmt.Errorf("discord: users/@me: HTTP %d %s", res.StatusCode, me.Message)
	}
}
