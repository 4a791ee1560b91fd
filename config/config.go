// Package config reads bot.yaml, golem's configuration, for cmd/bot.
//
// It composes the sections that the other packages declare: each adapter
// its own (slack.Config, telegram.Config, discord.Config, httpapi.Config)
// and each engine of the engine registry its own under engines.<name>
// (engine.Settings), so that adding an engine touches nothing here and
// adding a platform adds one field. core only takes the resulting
// core.Options from cmd/bot.
//
// Every key has a default (Default), so an empty or missing file runs a
// local bot with the registry's default engine. ${VAR} expands from the
// environment in every value; unknown keys and bad values are errors that
// name the key ("slack.bot_token: ...", "engines.cursor.model: ...",
// "timeout: ...").
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/golem-chat/golem/adapters/discord"
	"github.com/golem-chat/golem/adapters/httpapi"
	"github.com/golem-chat/golem/adapters/slack"
	"github.com/golem-chat/golem/adapters/telegram"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/sandbox"
	"github.com/golem-chat/golem/schedule"
	"github.com/golem-chat/golem/worktree"
)

// Config is bot.yaml.
type Config struct {
	Engine        string        `yaml:"engine"`         // default engine, a name of the engine registry
	Workspace     string        `yaml:"workspace"`      // the agent's working directory
	Skills        string        `yaml:"skills"`         // skills injected into the workspace
	Store         string        `yaml:"store"`          // the bbolt file, or etcd://host:port,host:port/prefix (etcds:// for TLS)
	StoreTLS      StoreTLS      `yaml:"store_tls"`      // with etcds://
	Replica       string        `yaml:"replica"`        // this replica's name in logs, /status and metrics ("" = the host name)
	ReplicaTTL    time.Duration `yaml:"replica_ttl"`    // with etcd: a replica silent this long is dead, its conversations move
	SessionScope  core.Scope    `yaml:"session_scope"`  // channel | thread | user
	Timeout       time.Duration `yaml:"timeout"`        // per turn
	MaxConcurrent int           `yaml:"max_concurrent"` // turns at once, all conversations
	QueueDepth    int           `yaml:"queue_depth"`    // waiting messages per conversation
	Busy          core.Busy     `yaml:"busy"`           // while an answer runs: steer | interrupt | queue ("" steers where the engine can)
	MaxUpload     int64         `yaml:"max_upload_bytes"`
	LogLevel      string        `yaml:"log_level"` // debug | info | warn | error

	// Isolation is shared (every conversation in the workspace itself) or
	// worktree (each in a git worktree of its own, see package worktree).
	Isolation   worktree.Isolation `yaml:"isolation"`
	BaseBranch  string             `yaml:"base_branch"`  // where new branches start; "" = HEAD
	WorktreeTTL time.Duration      `yaml:"worktree_ttl"` // idle worktrees older than this are removed if nothing is lost
	PRCommand   string             `yaml:"pr_command"`   // what /pr runs in the worktree; {branch} is filled in

	Access Access `yaml:"access"`

	// Sandbox is how each agent is sandboxed (see package sandbox).
	Sandbox sandbox.Config `yaml:"sandbox"`

	// Context bounds what a turn is told of the chat before its message.
	Context Context `yaml:"context"`

	// Footer adds a line under each final answer: engine, model, tokens,
	// cost and time.
	Footer bool   `yaml:"footer"`
	Limits Limits `yaml:"limits"`

	// Permissions is how much the agent may do without asking, and who
	// answers when it asks.
	Permissions Permissions `yaml:"permissions"`

	// Schedules are the scheduled prompts' settings and the operator's
	// own (see package schedule).
	Schedules schedule.Config `yaml:"schedules"`

	// Engines holds the section engines.<name> of every engine in the
	// registry, by name; an engine the file does not mention has its
	// defaults. It is decoded by Load (see decode), hence no yaml key here.
	Engines map[string]engine.Settings `yaml:"-"`

	// Channels overrides engine, model or workdir for named conversations,
	// keyed "platform:channel" (e.g. "slack:C0123", "telegram:-100123").
	Channels map[string]Channel `yaml:"channels"`

	Slack    slack.Config    `yaml:"slack"`
	Telegram telegram.Config `yaml:"telegram"`
	Discord  discord.Config  `yaml:"discord"`
	HTTP     httpapi.Config  `yaml:"http"`

	dir      string            // the config file's folder; relative paths resolve from it
	file     string            // the config file read, absolute; "" for none
	expanded map[string]string // each ${VAR} of the file and the key it was first found at
}

// File is the absolute path of the configuration file read, "" when none
// was (the defaults run).
func (c *Config) File() string { return c.file }

// Withheld returns the variables of golem's environment that no agent may
// be given: those the file expands outside the engines' sections (a
// platform token, http.token, ...), sorted. An engine's own key expanded in
// its section is the engines' business: each agent gets what its
// allowlist names.
func (c *Config) Withheld() []string {
	var names []string
	for name, key := range c.expanded {
		if !strings.HasPrefix(key, "engines.") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// secreter is a section that holds secrets (a platform's tokens, the HTTP
// API's): Secrets lists them.
type secreter interface{ Secrets() []string }

// Secrets lists the values that no output may show, so that no line
// carries one even if an error quoted it: every section's own (each
// section that holds one says so with a Secrets method, so a new platform
// cannot forget its token), every engine's API key, and every value the
// file took from the environment (${VAR}). Values under 4 characters are
// left out: hiding them would garble any text.
func (c *Config) Secrets() []string {
	var s []string
	v := reflect.ValueOf(*c)
	for i := range v.NumField() {
		if !v.Type().Field(i).IsExported() {
			continue
		}
		if sec, ok := v.Field(i).Interface().(secreter); ok {
			s = append(s, sec.Secrets()...)
		}
	}
	for _, set := range c.Engines {
		s = append(s, set.Base().APIKey)
	}
	for name := range c.expanded {
		s = append(s, os.Getenv(name))
	}
	slices.Sort(s)
	return slices.DeleteFunc(slices.Compact(s), func(v string) bool { return len(v) < 4 })
}

// Access is the access: section.
type Access struct {
	Allow []string `yaml:"allow"` // "slack:U123", "telegram:123", "discord:9876", "slack:*", "*"
}

// Context is the context: section: the earlier messages of a chat that a
// turn's prompt quotes (core.ContextLimits). max_messages: 0 turns it off.
type Context struct {
	MaxMessages int `yaml:"max_messages"`
	MaxChars    int `yaml:"max_chars"`
}

// Limits is the limits: section: spending budgets, as far as the CLIs
// report a cost (core.Budgets). Zero is no limit.
type Limits struct {
	DailyUSDPerUser           float64 `yaml:"daily_usd_per_user"`
	MonthlyUSDPerConversation float64 `yaml:"monthly_usd_per_conversation"`
	// ExemptApprovers exempts the approvers of permission requests.
	ExemptApprovers bool `yaml:"exempt_approvers"`
}

// Permissions is the permissions: section.
type Permissions struct {
	Mode      string        `yaml:"mode"`      // ask | accept-edits | plan | bypass
	Approvers []string      `yaml:"approvers"` // who may answer besides the asker: "slack:U123", "slack:*", "*"
	Timeout   time.Duration `yaml:"timeout"`   // an unanswered request is denied
}

// Channel is one entry of channels:, a per-conversation override.
type Channel struct {
	Engine      string `yaml:"engine"`
	Permissions string `yaml:"permissions"` // a permissions.mode for this conversation
	Model       string `yaml:"model"`
	Workdir     string `yaml:"workdir"` // relative to the config file's folder
	// Sandbox overrides sandbox: for this conversation: mode and network
	// replace the global ones, allow_hosts and writable add to them.
	Sandbox sandbox.Config `yaml:"sandbox"`
}

// StoreTLS are the files that reach etcd over TLS (store: etcds://...),
// relative to the config file's folder: the CA that signed the members'
// certificates ("" = the system's), and this client's certificate and key
// where etcd asks for one (both or neither).
type StoreTLS struct {
	CA   string `yaml:"ca"`
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
}

// StoreIsEtcd reports whether store: names etcd rather than a bbolt file.
func (c *Config) StoreIsEtcd() bool {
	return strings.HasPrefix(c.Store, "etcd://") || strings.HasPrefix(c.Store, "etcds://")
}

// DataDir is the folder beside the store, where the worktrees live: the
// bbolt file's folder, or with etcd the default store's (./data).
func (c *Config) DataDir() string {
	if c.StoreIsEtcd() {
		return filepath.Dir(c.Path(Default().Store))
	}
	return filepath.Dir(c.Path(c.Store))
}

// Default is the configuration an empty bot.yaml gives.
func Default() Config {
	c := Config{
		Engine:        engine.Default().Name,
		Workspace:     "./workspace",
		Skills:        "./skills",
		Store:         "./data/golem.db",
		SessionScope:  core.ScopeChannel,
		Timeout:       10 * time.Minute,
		ReplicaTTL:    10 * time.Second,
		MaxConcurrent: 8,
		QueueDepth:    5,
		Context:       Context{MaxMessages: 20, MaxChars: 8000},
		MaxUpload:     20 << 20,
		LogLevel:      "info",
		Permissions:   Permissions{Mode: string(engine.ModeAsk), Timeout: 10 * time.Minute},
		Isolation:     worktree.Shared,
		Sandbox:       sandbox.Default(),
		Schedules:     schedule.DefaultConfig(),
		WorktreeTTL:   336 * time.Hour,
		Engines:       map[string]engine.Settings{},
		Slack: slack.Config{APIURL: slack.DefaultAPIURL, Streaming: slack.StreamEdits, ToolActivity: slack.ActivityReplies,
			SuggestedPrompts: []slack.Prompt{}},
		Telegram: telegram.Config{APIURL: telegram.DefaultAPIURL},
		Discord:  discord.Config{APIURL: discord.DefaultAPIURL},
		HTTP:     httpapi.Config{Listen: httpapi.DefaultListen},
		dir:      ".",
	}
	for _, s := range engine.Engines() {
		c.Engines[s.Name] = s.NewSettings()
	}
	return c
}

// Load reads path over Default. A missing file is not an error when
// allowMissing is set (the defaults run).
func Load(path string, allowMissing bool) (Config, error) {
	c := Default()
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
	if c.file, err = filepath.Abs(path); err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	return c, c.Validate()
}

// Path resolves a configured path relative to the config file's folder.
func (c *Config) Path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.dir, p)
}

// Overrides returns channels: as core takes them, workdirs made absolute.
func (c *Config) Overrides() (map[string]core.Override, error) {
	out := make(map[string]core.Override, len(c.Channels))
	for key, ch := range c.Channels {
		o := core.Override{Engine: ch.Engine, Model: ch.Model, Permissions: engine.Mode(ch.Permissions), Sandbox: ch.Sandbox}
		if ch.Workdir != "" {
			dir, err := filepath.Abs(c.Path(ch.Workdir))
			if err != nil {
				return nil, fmt.Errorf("channels.%s.workdir: %w", key, err)
			}
			o.Workdir = dir
		}
		out[key] = o
	}
	return out, nil
}
