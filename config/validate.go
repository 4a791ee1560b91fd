package config

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/golem-chat/golem/adapters/httpapi"
	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
	"github.com/golem-chat/golem/store/etcdstore"
	"github.com/golem-chat/golem/worktree"
)

// Validate checks values, naming the key of the first bad one.
func (c *Config) Validate() error {
	if _, ok := engine.Find(c.Engine); !ok {
		return fmt.Errorf("engine: %q is not %s", c.Engine, engine.NamesText())
	}
	if _, err := core.ParseScope(string(c.SessionScope)); err != nil {
		return fmt.Errorf("session_scope: %w", err)
	}
	if err := c.validateStore(); err != nil {
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
	if _, err := core.ParseBusy(string(c.Busy)); err != nil {
		return fmt.Errorf("busy: %w", err)
	}
	if c.Context.MaxMessages < 0 {
		return fmt.Errorf("context.max_messages: must not be negative (0 turns the context off)")
	}
	if c.Context.MaxChars < 0 {
		return fmt.Errorf("context.max_chars: must not be negative")
	}
	if c.Context.MaxChars > core.MaxContextChars {
		return fmt.Errorf("context.max_chars: %d is more than the most it may be, %d", c.Context.MaxChars, core.MaxContextChars)
	}
	if err := c.Telegram.Memory.Check(); err != nil {
		return err
	}
	if err := c.Schedules.Validate("schedules"); err != nil {
		return err
	}
	if c.MaxUpload < 0 {
		return fmt.Errorf("max_upload_bytes: must not be negative")
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log_level: %q is not debug, info, warn or error", c.LogLevel)
	}
	if c.Limits.DailyUSDPerUser < 0 {
		return fmt.Errorf("limits.daily_usd_per_user: must not be negative (0 is no limit)")
	}
	if c.Limits.MonthlyUSDPerConversation < 0 {
		return fmt.Errorf("limits.monthly_usd_per_conversation: must not be negative (0 is no limit)")
	}
	if _, err := worktree.ParseIsolation(string(c.Isolation)); err != nil {
		return err
	}
	if c.WorktreeTTL <= 0 {
		return fmt.Errorf("worktree_ttl: must be positive, like 336h")
	}
	keys := make([]string, 0, len(c.Channels))
	for key := range c.Channels {
		keys = append(keys, key)
	}
	sort.Strings(keys) // the first bad one is the same every time
	for _, key := range keys {
		if !strings.Contains(key, ":") {
			return fmt.Errorf("channels: %q must be platform:channel", key)
		}
		if e := c.Channels[key].Engine; e != "" {
			if _, ok := engine.Find(e); !ok {
				return fmt.Errorf("channels.%s.engine: %q is not %s", key, e, engine.NamesText())
			}
		}
	}
	if err := c.Sandbox.Validate("sandbox"); err != nil {
		return err
	}
	if err := c.Slack.Validate(); err != nil {
		return err
	}
	if c.Sandbox.Mode == "" || c.Sandbox.Network == "" {
		return fmt.Errorf("sandbox: mode and network must be set (auto and allowlist by default)")
	}
	for _, key := range keys {
		if err := c.Channels[key].Sandbox.Validate("channels." + key + ".sandbox"); err != nil {
			return err
		}
	}
	if err := c.validatePermissions(keys); err != nil {
		return err
	}
	for i, a := range c.Access.Allow {
		if a != "*" && !strings.Contains(a, ":") {
			return fmt.Errorf("access.allow[%d]: %q must be platform:user or *", i, a)
		}
	}
	if err := c.validatePassEnv(); err != nil {
		return err
	}
	if c.HTTP.Listen != "" {
		host, _, err := net.SplitHostPort(c.HTTP.Listen)
		if err != nil {
			return fmt.Errorf("http.listen: %w", err)
		}
		if c.HTTP.Token == "" && !httpapi.IsLoopback(host) {
			return fmt.Errorf("http.listen: %s is not a loopback address; set http.token", c.HTTP.Listen)
		}
	}
	return nil
}

// validateStore checks store: and store_tls:.
func (c *Config) validateStore() error {
	tlsSet := c.StoreTLS != StoreTLS{}
	switch {
	case c.Store == "":
		return fmt.Errorf("store: must be a file path or an etcd:// URL")
	case !c.StoreIsEtcd():
		if strings.Contains(c.Store, "://") {
			return fmt.Errorf("store: %q is neither a file path nor an etcd:// or etcds:// URL", c.Store)
		}
		if tlsSet {
			return fmt.Errorf("store_tls: set, but store: is a bbolt file, not etcds://")
		}
		return nil
	}
	_, secure, err := etcdstore.ParseURL(c.Store)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if c.ReplicaTTL < 2*time.Second {
		return fmt.Errorf("replica_ttl: %v is too short: etcd grants no lease under 2s", c.ReplicaTTL)
	}
	if tlsSet && !secure {
		return fmt.Errorf("store_tls: set, but store: is etcd://; use etcds:// to reach etcd over TLS")
	}
	if (c.StoreTLS.Cert == "") != (c.StoreTLS.Key == "") {
		return fmt.Errorf("store_tls: cert and key go together (set both or neither)")
	}
	return nil
}

// validatePermissions checks permissions: and the channels' overrides of
// its mode, and that each conversation's engine honours its mode: golem
// never runs an agent in bypass because its CLI cannot ask.
func (c *Config) validatePermissions(channels []string) error {
	mode, err := engine.ParseMode(c.Permissions.Mode)
	if err != nil {
		return fmt.Errorf("permissions.mode: %w", err)
	}
	if c.Permissions.Timeout <= 0 {
		return fmt.Errorf("permissions.timeout: must be positive, like 10m")
	}
	for i, a := range c.Permissions.Approvers {
		if a != "*" && !strings.Contains(a, ":") {
			return fmt.Errorf("permissions.approvers[%d]: %q must be platform:user, platform:* or *", i, a)
		}
	}
	def, _ := engine.Find(c.Engine)
	if err := def.CheckMode(mode); err != nil {
		return fmt.Errorf("permissions.mode: %w", err)
	}
	for _, key := range channels {
		ch := c.Channels[key]
		m, field := mode, "permissions.mode"
		if ch.Permissions != "" {
			if m, err = engine.ParseMode(ch.Permissions); err != nil {
				return fmt.Errorf("channels.%s.permissions: %w", key, err)
			}
			field = "channels." + key + ".permissions"
		}
		spec := def
		if ch.Engine != "" {
			spec, _ = engine.Find(ch.Engine)
		}
		if err := spec.CheckMode(m); err != nil {
			return fmt.Errorf("%s: %w (in channels.%s)", field, err, key)
		}
	}
	return nil
}

// validatePassEnv checks each engine's pass_env: variable names, none of
// them one that golem's own configuration reads (the agent never sees
// those).
func (c *Config) validatePassEnv() error {
	for _, name := range engine.Names() {
		set := c.Engines[name]
		if set == nil {
			continue
		}
		withheld := c.Withheld()
		for i, v := range set.Base().PassEnv {
			if !envName.MatchString(v) {
				return fmt.Errorf("engines.%s.pass_env[%d]: %q is not a variable name", name, i, v)
			}
			if slices.Contains(withheld, v) {
				return fmt.Errorf("engines.%s.pass_env[%d]: %s is read by golem's own configuration (%s); the agent is never given it",
					name, i, v, c.expanded[v])
			}
		}
	}
	return nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
