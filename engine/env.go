package engine

import (
	"os"
	"slices"
	"strings"
)

// commonEnv are the variables every agent is given from golem's
// environment: the session's basics, the locale, proxies and the places
// programs keep their files and trust their certificates. A name ending in
// * is a prefix.
var commonEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TZ", "TERM", "COLORTERM", "NO_COLOR", "TMPDIR",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
}

// envAllowed reports whether name matches one of patterns (a name, or a
// prefix ending in *).
func envAllowed(patterns []string, name string) bool {
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		} else if p == name {
			return true
		}
	}
	return false
}

// agentEnv is the environment of spec's CLI configured by cfg, built from
// an allowlist, never inherited whole: of golem's own environment only
// commonEnv, the CLI's own variables (spec.Env) and cfg.PassEnv, less
// cfg.Withhold (what golem's configuration read); then cfg.Env and the
// key's variables (keyEnv, nil for none). CLAUDECODE (set inside a Claude
// Code session, it would make a nested claude refuse to start) never goes
// on. With duplicates exec uses the last value of a key.
func agentEnv(spec Spec, cfg Config, key string, keyEnv func(string) []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "CLAUDECODE" || slices.Contains(cfg.Withhold, name) {
			continue
		}
		if envAllowed(commonEnv, name) || envAllowed(spec.Env, name) || slices.Contains(cfg.PassEnv, name) {
			env = append(env, kv)
		}
	}
	for k, v := range cfg.Env {
		if k != "CLAUDECODE" {
			env = append(env, k+"="+v)
		}
	}
	if key != "" && keyEnv != nil {
		env = append(env, keyEnv(key)...)
	}
	return env
}
