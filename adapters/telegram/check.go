package telegram

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

// ErrTokenRefused is wrapped by Check's error when the Bot API answers 401
// (or 404, its answer to a token of the wrong shape).
var ErrTokenRefused = errors.New("token refused")

// Check asks the Bot API at c.APIURL whether the token works (getMe), in
// one attempt bounded by ctx, and returns the bot's username. Neither the
// error nor the result carries the token, which is part of every Bot API
// URL.
func Check(ctx context.Context, c Config) (string, error) {
	base := strings.TrimRight(c.APIURL, "/")
	if base == "" {
		base = DefaultAPIURL
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/bot"+c.Token+"/getMe", nil)
	if err != nil {
		return "", fmt.Errorf("telegram: getMe: bad api_url %q", base)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err // its URL holds the token
		}
		return "", fmt.Errorf("telegram: getMe: cannot reach %s: %s", base, strings.ReplaceAll(err.Error(), c.Token, "[token]"))
	}
	defer res.Body.Close()
	var ans struct {
		OK          bool   `json:"ok"`
		Description string `json:"description"`
		Result      struct {
			Username string `json:"username"`
		} `json:"result"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&ans); err != nil {
		return "", fmt.Errorf("telegram: getMe: HTTP %d, not a Bot API answer", res.StatusCode)
	}
	switch {
	case ans.OK:
		return "bot @" + ans.Result.Username, nil
	case res.StatusCode == http.StatusUnauthorized, res.StatusCode == http.StatusNotFound:
		return "", fmt.Errorf("telegram.token: getMe: %w (%s)", ErrTokenRefused, ans.Description)
	default:
		return "", fmt.Errorf("telegram: getMe: HTTP %d: %s", res.StatusCode, ans.Description)
	}
}
