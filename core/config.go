package core

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/golem-chat/golem/engine"
	"go.yaml.in/yaml/v3"
)

// Config is bot.yaml. Every key has a default (see DefaultConfig), so an
// empty or missing file runs a local bot with Claude Code.
type Config struct {
	Engine        string        `yaml:"engine"`         // default engine: claude-code | cursor
	Workspace     string        `yaml:"workspace"`      // the agent's working directory
	Skills        string        `yaml:"skills"`         // skills injected into the workspace
	Store         string        `yaml:"store"`          // the bbolt file
	SessionScope  string        `yaml:"session_scope"`  // channel | thread | user
	Timeout       time.Duration `yaml:"timeout"`        // per turn
	MaxConcurrent int           `yaml:"max_concurrent"` // turns at once, all conversations
	QueueDepth    int           `yaml:"queue_depth"`    // waiting messages per conversation
	MaxUpload     int64         `yaml:"max_upload_bytes"`
	LogLevel      string        `yaml:"log_level"` // debug | info | warn | error

	Access struct {
		Allow []string `yaml:"allow"` // "slack:U123", "telegram:123", "discord:9876", "slack:*", "*"
	} `yaml:"access"`

	Engines struct {
		ClaudeCode EngineConfig `yaml:"claude-code"`
		Cursor     EngineConfig `yaml:"cursor"`
		Codex      EngineConfig `yaml:"codex"`
	} `yaml:"engines"`

	// Channels overrides engine, model or workdir for named conversations,
	// keyed "platform:channel" (e.g. "slack:C0123", "telegram:-100123").
	Channels map[string]ChannelConfig `yaml:"channels"`

	Slack    SlackConfig    `yaml:"slack"`
	Telegram TelegramConfig `yaml:"telegram"`
	Discord  DiscordConfig  `yaml:"discord"`
	HTTP     HTTPConfig     `yaml:"http"`

	dir string // the config file's folder; relative paths resolve from it
}

// EngineConfig configures one agent CLI.
type EngineConfig struct {
	Command string            `yaml:"command"` // a name looked up in PATH and ~/.local/bin, or a path
	Model   string            `yaml:"model"`   // "" = the CLI's default
	APIKey  string            `yaml:"api_key"` // "" = inherit the environment
	Env     map[string]string `yaml:"env"`
	Args    []string          `yaml:"args"`
	// PartialMessages streams text while a block is being written (Claude
	// Code's --include-partial-messages). Default on.
	PartialMessages *bool `yaml:"partial_messages"`
}

// ChannelConfig is a per-conversation override.
type ChannelConfig struct {
	Engine  string `yaml:"engine"`
	Model   string `yaml:"model"`
	Workdir string `yaml:"workdir"`
}

type SlackConfig struct {
	BotToken string `yaml:"bot_token"`
	AppToken string `yaml:"app_token"`
	APIURL   string `yaml:"api_url"`
}

type TelegramConfig struct {
	Token  string `yaml:"token"`
	APIURL string `yaml:"api_url"`
	Drafts bool   `yaml:"drafts"` // live drafts in private chats (Bot API 9.5+)
}

type DiscordConfig struct {
	Token  string   `yaml:"token"`
	APIURL string   `yaml:"api_url"`
	Guilds []string `yaml:"guilds"` // register slash commands per guild (instant) instead of globally
}

type HTTPConfig struct {
	Listen string `yaml:"listen"` // "" = off
	Token  string `yaml:"token"`  // required on a non-loopback address
}

// DefaultConfig is the configuration an empty bot.yaml gives.
func DefaultConfig() Config {
	var c Config
	c.Engine = "claude-code"
	c.Workspace = "./workspace"
	c.Skills = "./skills"
	c.Store = "./data/golem.db"
	c.SessionScope = string(ScopeChannel)
	c.Timeout = 10 * time.Minute
	c.MaxConcurrent = 8
	c.QueueDepth = 5
	c.MaxUpload = 20 << 20
	c.LogLevel = "info"
	c.Engines.ClaudeCode.Command = "claude"
	c.Engines.Cursor.Command = "agent"
	c.Slack.APIURL = "https://slack.com/api/"
	c.Telegram.APIURL = "https://api.telegram.org"
	c.Discord.APIURL = "https://discord.com"
	c.HTTP.Listen = "127.0.0.1:8080"
	c.dir = "."
	return c
}

// LoadConfig reads path over DefaultConfig. A missing file is not an error
// when allowMissing is set (the defaults run). ${VAR} expands from the
// environment in every value; unknown keys and bad values are errors that
// name the key.
func LoadConfig(path string, allowMissing bool) (Config, error) {
	c := DefaultConfig()
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && allowMissing {
		return c, c.Validate()
	}
	if err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	if err := c.parse(raw); err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	c.dir = filepath.Dir(path)
	return c, c.Validate()
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// parse decodes YAML over c. Expansion happens on the parsed scalars, not
// the raw text, so an environment value can never inject YAML.
func (c *Config) parse(raw []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return err
	}
	if len(doc.Content) == 0 {
		return nil // empty file: defaults
	}
	expandScalars(&doc)
	expanded, err := yaml.Marshal(&doc)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(expanded))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		return nameKeys(err, &doc)
	}
	return nil
}

var errLine = regexp.MustCompile(`line (\d+): `)

// nameKeys rewrites yaml's "line N: ..." errors to name the key at line N
// (the expanded document keeps the original's layout), so that
// "cannot unmarshal !!str `soon` into time.Duration" says it is timeout.
func nameKeys(err error, doc *yaml.Node) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	msgs := make([]string, len(te.Errors))
	for i, e := range te.Errors {
		msgs[i] = e
		if m := errLine.FindStringSubmatch(e); m != nil {
			line, _ := strconv.Atoi(m[1])
			if key := keyAt(doc, line, ""); key != "" {
				msgs[i] = key + ": " + strings.TrimPrefix(e, m[0])
			}
		}
	}
	return errors.New(strings.Join(msgs, "; "))
}

// keyAt returns the dotted path of the mapping key whose key or value
// starts on line.
func keyAt(n *yaml.Node, line int, prefix string) string {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if k := keyAt(c, line, prefix); k != "" {
				return k
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			path := k.Value
			if prefix != "" {
				path = prefix + "." + k.Value
			}
			if deeper := keyAt(v, line, path); deeper != "" {
				return deeper
			}
			if k.Line == line || v.Line == line {
				return path
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if k := keyAt(c, line, fmt.Sprintf("%s[%d]", prefix, i)); k != "" {
				return k
			}
			if c.Line == line {
				return fmt.Sprintf("%s[%d]", prefix, i)
			}
		}
	}
	return ""
}

func expandScalars(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
		n.Value = envRef.ReplaceAllStringFunc(n.Value, func(ref string) string {
			return os.Getenv(ref[2 : len(ref)-1])
		})
		if n.Value == "" {
			n.Tag = "!!str" // an unset ${VAR} is an empty string, not null
		}
	}
	for _, k := range n.Content {
		expandScalars(k)
	}
}

// Validate checks values, naming the key of the first bad one.
func (c *Config) Validate() error {
	if _, ok := engine.Find(c.Engine); !ok {
		return fmt.Errorf("engine: %q is not %s", c.Engine, engine.NamesText())
	}
	if _, err := ParseScope(c.SessionScope); err != nil {
		return err
	}
	if c.Timeout <= 0 {
		return fmt.Errorf("timeout: must be positive, like 10m")
	}
	if c.MaxConcurrent < 1 {
		return fmt.Errorf("max_concurrent: must be at least 1")
	}
	if c.QueueDepth < 0 {
		return fmt.Errorf("queue_depth: must not be negative")
	}
	if c.MaxUpload < 0 {
		return fmt.Errorf("max_upload_bytes: must not be negative")
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log_level: %q is not debug, info, warn or error", c.LogLevel)
	}
	for key, ch := range c.Channels {
		if !strings.Contains(key, ":") {
			return fmt.Errorf("channels: %q must be platform:channel", key)
		}
		if _, ok := engine.Find(ch.Engine); ch.Engine != "" && !ok {
			return fmt.Errorf("channels.%s.engine: %q is not %s", key, ch.Engine, engine.NamesText())
		}
	}
	for i, a := range c.Access.Allow {
		if a != "*" && !strings.Contains(a, ":") {
			return fmt.Errorf("access.allow[%d]: %q must be platform:user or *", i, a)
		}
	}
	if c.HTTP.Listen != "" {
		host, _, err := net.SplitHostPort(c.HTTP.Listen)
		if err != nil {
			return fmt.Errorf("http.listen: %w", err)
		}
		if c.HTTP.Token == "" && !IsLoopback(host) {
			return fmt.Errorf("http.listen: %s is not a loopback address; set http.token", c.HTTP.Listen)
		}
	}
	return nil
}

// IsLoopback reports whether host (a name or an IP, without port) is
// reachable only from this machine.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Path resolves a configured path relative to the config file's folder.
func (c *Config) Path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.dir, p)
}

// EngineConfig returns the settings of the named engine.
func (c *Config) EngineConfig(name string) EngineConfig {
	switch name {
	case "cursor":
		return c.Engines.Cursor
	case "codex":
		return c.Engines.Codex
	}
	return c.Engines.ClaudeCode
}
