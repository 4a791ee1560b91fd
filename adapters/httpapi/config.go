package httpapi

import (
	"net"
	"strings"
)

// DefaultListen is where the HTTP API and web chat listen by default: this
// machine only.
const DefaultListen = "127.0.0.1:8080"

// Config is the http: section of bot.yaml.
type Config struct {
	Listen string `yaml:"listen"` // "" = off
	Token  string `yaml:"token"`  // required on an address that is not loopback
}

// IsLoopback reports whether host (no port) names only this machine:
// "localhost" or a loopback IP, bracketed or not. An empty host means
// every interface.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return ip != nil && ip.IsLoopback()
}

// Secrets are the section's values that no output may show.
func (c Config) Secrets() []string { return []string{c.Token} }
