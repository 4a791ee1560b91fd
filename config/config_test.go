package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/engine"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bot.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadConfigShippedFile(t *testing.T) {
	c, err := Load("../bot.yaml", false)
	if err != nil {
		t.Fatalf("the shipped bot.yaml does not load: %v", err)
	}
	if c.Engine != "claude-code" || c.HTTP.Listen != "127.0.0.1:8080" {
		t.Errorf("unexpected defaults: engine %q, http.listen %q", c.Engine, c.HTTP.Listen)
	}
}

func TestLoadConfigMissingFileUsesDefaults(t *testing.T) {
	c, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Timeout != 10*time.Minute || c.MaxConcurrent != 8 || c.QueueDepth != 5 ||
		c.Context != (Context{MaxMessages: 20, MaxChars: 8000}) {
		t.Errorf("defaults not applied: %+v", c)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), false); err == nil {
		t.Error("a named config file that is missing must be an error")
	}
}

func TestLoadConfigExpandsEnvironment(t *testing.T) {
	t.Setenv("GOLEM_TEST_TOKEN", `xoxb-1: "quoted" # not a comment`)
	path := writeConfig(t, "slack:\n  bot_token: ${GOLEM_TEST_TOKEN}\n  app_token: ${GOLEM_TEST_UNSET}\ntimeout: 90s\n")
	c, err := Load(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if c.Slack.BotToken != `xoxb-1: "quoted" # not a comment` {
		t.Errorf("bot_token = %q", c.Slack.BotToken)
	}
	if c.Slack.AppToken != "" {
		t.Errorf("an unset variable must expand to empty, got %q", c.Slack.AppToken)
	}
	if c.Timeout != 90*time.Second {
		t.Errorf("timeout = %v", c.Timeout)
	}
	if c.Slack.APIURL != "https://slack.com/api/" {
		t.Errorf("defaults under a partly given section must stay: api_url = %q", c.Slack.APIURL)
	}
}

func TestLoadConfigErrorsNameTheKey(t *testing.T) {
	cases := []struct{ body, want string }{
		{"engnie: cursor\n", "engnie"},
		{"slack:\n  bot_tokn: x\n", "bot_tokn"},
		{"engine: no-such-cli\n", "engine"},
		{"session_scope: team\n", "session_scope"},
		{"busy: wait\n", "busy"},
		{"timeout: soon\n", "timeout"},
		{"max_concurrent: 0\n", "max_concurrent"},
		{"access:\n  allow: [alice]\n", "access.allow"},
		{"http:\n  listen: 0.0.0.0:8080\n", "http.listen"},
		{"channels:\n  C1: {engine: cursor}\n", "channels"},
		{"log_level: loud\n", "log_level"},
		{"context:\n  max_messages: -1\n", "context.max_messages"},
		{"context:\n  max_chars: -5\n", "context.max_chars"},
		{"context:\n  max_mesages: 3\n", "max_mesages"},
		{"isolation: sandbox\n", "isolation"},
		{"worktree_ttl: -1h\n", "worktree_ttl"},
		{"permissions:\n  mode: yolo\n", "permissions.mode"},
		{"permissions:\n  timeout: 0s\n", "permissions.timeout"},
		{"permissions:\n  approvers: [bob]\n", "permissions.approvers[0]"},
		{"channels:\n  \"slack:C1\": {permissions: maybe}\n", "channels.slack:C1.permissions"},
		// An engine that cannot ask is refused in a mode that asks, naming
		// the key and the engine, never run in bypass instead.
		{"engine: cursor\n", "permissions.mode: engine cursor cannot honour \"ask\""},
		{"channels:\n  \"slack:C1\": {engine: cursor}\n", "permissions.mode: engine cursor"},
		{"engine: cursor\npermissions: {mode: bypass}\nchannels:\n  \"slack:C1\": {permissions: plan}\n",
			"channels.slack:C1.permissions: engine cursor cannot honour \"plan\""},
	}
	for _, tc := range cases {
		_, err := Load(writeConfig(t, tc.body), false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v does not name %q", tc.body, err, tc.want)
		}
	}
}

// context.max_chars is bounded: the context goes into every prompt of a
// mention, and a carried one into its message's mailbox record.
func TestContextMaxCharsIsBounded(t *testing.T) {
	for _, tc := range []struct {
		maxChars int
		want     string // the error; "" loads
	}{
		{0, ""},
		{8000, ""},
		{core.MaxContextChars, ""},
		{core.MaxContextChars + 1, "context.max_chars: 100001 is more than the most it may be, 100000"},
		{1 << 40, "context.max_chars: 1099511627776 is more than the most it may be, 100000"},
		{-5, "context.max_chars: must not be negative"},
	} {
		c, err := Load(writeConfig(t, fmt.Sprintf("context:\n  max_chars: %d\n", tc.maxChars)), false)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("max_chars %d: %v", tc.maxChars, err)
		case tc.want == "" && c.Context.MaxChars != tc.maxChars:
			t.Errorf("max_chars %d loaded as %d", tc.maxChars, c.Context.MaxChars)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("max_chars %d: error %v, want %q", tc.maxChars, err, tc.want)
		}
	}
}

func TestPermissionsConfig(t *testing.T) {
	c, err := Load(writeConfig(t, "permissions:\n  approvers: [\"slack:U1\", \"*\"]\n  timeout: 2m\n"+
		"channels:\n  \"slack:C1\": {permissions: bypass, engine: cursor}\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	if c.Permissions.Mode != "ask" || c.Permissions.Timeout != 2*time.Minute || len(c.Permissions.Approvers) != 2 {
		t.Errorf("permissions = %+v (mode ask is the default)", c.Permissions)
	}
	o, err := c.Overrides()
	if err != nil || o["slack:C1"].Permissions != "bypass" {
		t.Errorf("overrides = %+v, %v", o, err)
	}
}

func TestConfigPathsResolveFromTheFile(t *testing.T) {
	path := writeConfig(t, "workspace: ./ws\nstore: /abs/golem.db\n")
	c, err := Load(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Path(c.Workspace), filepath.Join(filepath.Dir(path), "ws"); got != want {
		t.Errorf("workspace = %q, want %q", got, want)
	}
	if c.Path(c.Store) != "/abs/golem.db" {
		t.Errorf("absolute path changed: %q", c.Path(c.Store))
	}
}

func FuzzLoadConfig(f *testing.F) {
	f.Add("engine: cursor\ntimeout: 5m\n")
	f.Add("access:\n  allow: ['*']\nchannels:\n  slack:C1: {model: x}\n")
	f.Add("engines:\n  claude-code: {partial_messages: false, env: {A: b}}\n  cursor:\n")
	f.Add("slack: {bot_token: [x], app_tokn: y}\nengines: [cursor]\n")
	f.Fuzz(func(t *testing.T, body string) {
		c := Default()
		if err := c.parse([]byte(body)); err == nil {
			_ = c.Validate()
		}
	})
}

func TestLoadConfigEngines(t *testing.T) {
	t.Setenv("GOLEM_TEST_KEY", "k-1")
	path := writeConfig(t, `engines:
  cursor:
    model: gpt-5
    api_key: ${GOLEM_TEST_KEY}
    env: {A: b}
  claude-code:
    command: /opt/claude
    partial_messages: false
    args: [--max-turns, "3"]
`)
	c, err := Load(path, false)
	if err != nil {
		t.Fatal(err)
	}
	cur := c.Engines["cursor"].Base()
	if cur.Model != "gpt-5" || cur.APIKey != "k-1" || cur.Env["A"] != "b" || cur.Command != "" {
		t.Errorf("engines.cursor = %+v", cur)
	}
	cc, ok := c.Engines["claude-code"].(*engine.ClaudeCodeSettings)
	if !ok {
		t.Fatalf("engines.claude-code is a %T", c.Engines["claude-code"])
	}
	if cc.Command != "/opt/claude" || cc.PartialMessages == nil || *cc.PartialMessages || !slices.Equal(cc.Args, []string{"--max-turns", "3"}) {
		t.Errorf("engines.claude-code = %+v", cc)
	}
	for _, name := range engine.Names() {
		if c.Engines[name] == nil {
			t.Errorf("no settings for engine %s", name)
		}
	}
}

func TestLoadConfigEngineWithoutKeysHasDefaults(t *testing.T) {
	c, err := Load(writeConfig(t, "engines:\n  cursor:\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	if c.Engines["cursor"] == nil || c.Engines["claude-code"] == nil {
		t.Fatalf("engines = %v", c.Engines)
	}
	if e := c.Engines["cursor"].Engine(); e.Name() != "cursor" {
		t.Errorf("engines.cursor builds %s", e.Name())
	}
}

// TestLoadConfigErrorsAreExact pins the messages of errors inside the
// sections the config package composes from other packages.
func TestLoadConfigErrorsAreExact(t *testing.T) {
	cases := []struct{ body, want string }{
		{"timeout: soon\n", "line 1: timeout: `soon` is not allowed here; give a duration such as 30s, 10m or 1h"},
		{"slack:\n  bot_token: [x]\n", "line 2: slack.bot_token: a list is not allowed here; give one value (a text)"},
		{"slack: {bot_token: x, app_tokn: y}\n", `line 1: slack.app_tokn: unknown key "app_tokn" (did you mean app_token?); allowed here: api_url, app_token, bot_token`},
		{"access:\n  allow:\n    - a:b\n    - [c]\n", "line 4: access.allow[1]: a list is not allowed here; give one value (a text)"},
		{"telegram:\n  drafts: maybe\n", "line 2: telegram.drafts: `maybe` is not allowed here; give true or false"},
		{"discord:\n  guilds: 5\n", "line 2: discord.guilds: `5` is not allowed here; give a list"},
		{"engines:\n  cursor:\n    model: [a, b]\n", "line 3: engines.cursor.model: a list is not allowed here; give one value (a text)"},
		{"engines:\n  cursor:\n    partial_messages: true\n", `line 3: engines.cursor.partial_messages: unknown key "partial_messages"; allowed here: api_key, args, command, env, model, pass_env`},
		{"engines:\n  claude-code:\n    partial_messages: sometimes\n", "line 3: engines.claude-code.partial_messages: `sometimes` is not allowed here; give true or false"},
		// An unknown key in each form: block, flow, nested under channels
		// (block and flow), and at the top: the path, the line, what the
		// section takes, never a Go type.
		{"slack:\n  bot_token: x\n  bot_tokn: y\n", `line 3: slack.bot_tokn: unknown key "bot_tokn" (did you mean bot_token?); allowed here: api_url, app_token, bot_token`},
		{"engine: claude-code\nslack: {bot_token: x, bot_tokn: y}\n", `line 2: slack.bot_tokn: unknown key "bot_tokn" (did you mean bot_token?)`},
		{"channels:\n  \"slack:C1\":\n    enigne: cursor\n", `line 3: channels.slack:C1.enigne: unknown key "enigne" (did you mean engine?); allowed here: engine, model, permissions, sandbox, workdir`},
		{"channels: {\"slack:C1\": {enigne: cursor}}\n", `line 1: channels.slack:C1.enigne: unknown key "enigne" (did you mean engine?); allowed here: engine, model, permissions, sandbox, workdir`},
		{"timeout: 1m\nlimts:\n  x: 1\n", `line 2: limts: unknown key "limts" (did you mean limits?); allowed here: access,`},
		{"engines:\n  no-such-cli: {}\n", `engines.no-such-cli: "no-such-cli" is not ` + engine.NamesText()},
		{"engine: no-such-cli\n", `engine: "no-such-cli" is not ` + engine.NamesText()},
		{"channels:\n  slack:C1: {engine: no-such-cli}\n", `channels.slack:C1.engine: "no-such-cli" is not ` + engine.NamesText()},
		{"session_scope: team\n", `session_scope: "team" is not channel, thread or user`},
		{"busy: wait\n", `busy: "wait" is not steer, interrupt or queue`},
		{"telegram:\n  memory: {chat_bytes: 100, total_bytes: 10}\n", "telegram.memory.chat_bytes: 100 is more than total_bytes, 10"},
		{"telegram:\n  memory: {total_bytes: -1}\n", "telegram.memory.total_bytes: must not be negative"},
		{"telegram:\n  memory: {message: 5}\n", `line 2: telegram.memory.message: unknown key "message" (did you mean messages?); allowed here: chat_bytes, messages, total_bytes`},
		{"http:\n  listen: 0.0.0.0:8080\n", "http.listen: 0.0.0.0:8080 is not a loopback address; set http.token"},
		{"store: \"\"\n", "store: must be a file path or an etcd:// URL"},
		{"store: redis://10.0.0.1:6379\n", `store: "redis://10.0.0.1:6379" is neither a file path nor an etcd:// or etcds:// URL`},
		{"store: etcd://10.0.0.1/golem\n", `store: "etcd://10.0.0.1/golem": endpoint "10.0.0.1" is not host:port`},
		{"store: etcd://10.0.0.1:2379/golem\nstore_tls: {ca: ca.pem}\n", "store_tls: set, but store: is etcd://; use etcds://"},
		{"store_tls: {ca: ca.pem}\n", "store_tls: set, but store: is a bbolt file"},
		{"store: etcds://10.0.0.1:2379/golem\nstore_tls: {cert: c.pem}\n", "store_tls: cert and key go together"},
		{"store_tls: {crt: c.pem}\n", `store_tls.crt: unknown key "crt" (did you mean cert?)`},
		{"slack:\n  streaming: stream\n", `slack.streaming: "stream" is not edits or native`},
		{"slack:\n  tool_activity: cards\n", `slack.tool_activity: "cards" is not replies or tasks`},
		{"slack:\n  tool_activity: tasks\n", "slack.tool_activity: tasks needs slack.streaming: native (task cards live in a streamed answer)"},
		{"slack:\n  suggested_prompts: [{title: a, message: b}, {title: a, message: b}, {title: a, message: b}, {title: a, message: b}, {title: a, message: b}]\n",
			"slack.suggested_prompts: 5 prompts; Slack shows at most 4"},
		{"slack:\n  suggested_prompts: [{title: Tests}]\n", "slack.suggested_prompts[0].message: empty; each prompt needs a title and a message"},
		{"slack:\n  suggested_prompts: [{message: Run them}]\n", "slack.suggested_prompts[0].title: empty; each prompt needs a title and a message"},
		{"slack:\n  suggested_prompts:\n    - {titel: x, message: y}\n", `line 3: slack.suggested_prompts[0].titel: unknown key "titel" (did you mean title?)`},
	}
	for _, tc := range cases {
		_, err := Load(writeConfig(t, tc.body), false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.body, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), "struct {") || strings.Contains(err.Error(), "not found in type")) {
			t.Errorf("%q: error %v names a Go type", tc.body, err)
		}
	}
}

func TestStoreEtcd(t *testing.T) {
	c, err := Load(writeConfig(t, "store: etcds://10.0.0.1:2379,10.0.0.2:2379/golem\nstore_tls: {ca: ca.pem, cert: c.pem, key: k.pem}\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	if !c.StoreIsEtcd() || c.StoreTLS != (StoreTLS{CA: "ca.pem", Cert: "c.pem", Key: "k.pem"}) {
		t.Errorf("store %q, store_tls %+v", c.Store, c.StoreTLS)
	}
	if got, want := c.DataDir(), c.Path("data"); got != want {
		t.Errorf("with etcd the data folder is %q, want %q (the default store's)", got, want)
	}
}

func TestConfigOverrides(t *testing.T) {
	path := writeConfig(t, "channels:\n  slack:C1: {engine: cursor, model: m, workdir: ./proj, permissions: bypass}\n  telegram:-100: {workdir: /abs}\n")
	c, err := Load(path, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Overrides()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]core.Override{
		"slack:C1":      {Engine: "cursor", Model: "m", Workdir: filepath.Join(filepath.Dir(path), "proj"), Permissions: engine.ModeBypass},
		"telegram:-100": {Workdir: "/abs"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("overrides = %+v, want %+v", got, want)
	}
}

// TestPassEnv: engines.NAME.pass_env is read, a variable the file expands
// outside the engines' sections (a platform token) is withheld from every
// agent, and pass_env naming one is refused with the key.
func TestPassEnv(t *testing.T) {
	t.Setenv("GOLEM_TEST_SLACK", "xoxb-1")
	t.Setenv("GOLEM_TEST_KEY", "k-1")
	path := writeConfig(t, `slack: {bot_token: "${GOLEM_TEST_SLACK}"}
engines:
  claude-code: {api_key: "${GOLEM_TEST_KEY}", pass_env: [GH_TOKEN]}
`)
	c, err := Load(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Engines["claude-code"].Base().PassEnv; !slices.Equal(got, []string{"GH_TOKEN"}) {
		t.Errorf("pass_env = %v", got)
	}
	if got := c.Withheld(); !slices.Equal(got, []string{"GOLEM_TEST_SLACK"}) {
		t.Errorf("withheld: %v, want the Slack token's variable only", got)
	}
	if abs, _ := filepath.Abs(path); c.File() != abs {
		t.Errorf("File() = %q, want %q", c.File(), abs)
	}
	for body, want := range map[string]string{
		"slack: {bot_token: \"${GOLEM_TEST_SLACK}\"}\nengines:\n  codex: {pass_env: [GOLEM_TEST_SLACK]}\n": "engines.codex.pass_env[0]: GOLEM_TEST_SLACK is read by golem's own configuration (slack.bot_token)",
		"engines:\n  codex: {pass_env: [\"A-B\"]}\n":                                                       `engines.codex.pass_env[0]: "A-B" is not a variable name`,
	} {
		_, err := Load(writeConfig(t, body), false)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", body, err, want)
		}
	}
}

// TestSandboxConfig: sandbox: and a channel's sandbox: are read, the
// channel's override reaches its core.Override, and bad values name their
// key.
func TestSandboxConfig(t *testing.T) {
	c, err := Load(writeConfig(t, `sandbox: {mode: on, network: allowlist, allow_hosts: [git.example.com, "10.0.0.1:8080"], writable: [/srv/cache]}
channels:
  "slack:C1": {sandbox: {network: open}}
`), false)
	if err != nil {
		t.Fatal(err)
	}
	if c.Sandbox.Mode != "on" || len(c.Sandbox.AllowHosts) != 2 || c.Sandbox.Writable[0] != "/srv/cache" {
		t.Errorf("sandbox = %+v", c.Sandbox)
	}
	o, err := c.Overrides()
	if err != nil {
		t.Fatal(err)
	}
	if o["slack:C1"].Sandbox.Network != "open" {
		t.Errorf("the channel's sandbox = %+v", o["slack:C1"].Sandbox)
	}
	if d := Default(); d.Slack.Streaming != "edits" || d.Slack.ToolActivity != "replies" || len(d.Slack.SuggestedPrompts) != 0 {
		t.Errorf("the default slack section is %+v, want edits, replies and no prompts", d.Slack)
	}
	if c, err := Load(writeConfig(t, "slack:\n  streaming: native\n  tool_activity: tasks\n  suggested_prompts:\n    - {title: Tests, message: Run the tests}\n"), false); err != nil ||
		c.Slack.ToolActivity != "tasks" || len(c.Slack.SuggestedPrompts) != 1 || c.Slack.SuggestedPrompts[0].Message != "Run the tests" {
		t.Errorf("the slack section loads as %+v, %v", c.Slack, err)
	}
	if d := Default(); d.Sandbox.Mode != "auto" || d.Sandbox.Network != "allowlist" {
		t.Errorf("the default sandbox is %+v, want auto and allowlist", d.Sandbox)
	}
	for body, want := range map[string]string{
		"sandbox: {mode: maybe}\n":                                         `sandbox.mode: "maybe" is not auto, on or off`,
		"slack: {streaming: smooth}\n":                                     `slack.streaming: "smooth" is not edits or native`,
		"sandbox: {network: some}\n":                                       `sandbox.network: "some" is not allowlist, open or none`,
		"sandbox: {allow_hosts: [\"https://x.example.com/\"]}\n":           `sandbox.allow_hosts[0]:`,
		"sandbox: {writable: [cache]}\n":                                   `sandbox.writable[0]: "cache" must be an absolute path`,
		"channels:\n  \"slack:C1\": {sandbox: {network: wide}}\n":          `channels.slack:C1.sandbox.network: "wide"`,
		"channels:\n  \"slack:C1\": {sandbox: {allow_hosts: [\"a:b\"]}}\n": `channels.slack:C1.sandbox.allow_hosts[0]`,
		"sandbox: {netwrk: open}\n":                                        `netwrk`,
	} {
		_, err := Load(writeConfig(t, body), false)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", body, err, want)
		}
	}
}

// Every section's token or key is among Secrets, so that doctor's output
// hides it: each string field named *token or *_key of a section, set to a
// value of its own, must come back — a new platform whose section forgets
// its Secrets method fails here.
func TestSecretsNameEveryTokenOfEverySection(t *testing.T) {
	c := Default()
	want := map[string]string{}
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		sec := v.Field(i)
		if !v.Type().Field(i).IsExported() || sec.Kind() != reflect.Struct {
			continue
		}
		for j := range sec.NumField() {
			f := sec.Type().Field(j)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if f.Type.Kind() == reflect.String && (strings.HasSuffix(name, "token") || strings.HasSuffix(name, "_key")) {
				val := fmt.Sprintf("secret-%d-%d", i, j)
				sec.Field(j).SetString(val)
				want[v.Type().Field(i).Name+"."+name] = val
			}
		}
	}
	if len(want) < 5 {
		t.Fatalf("found only %v: the test no longer sees the sections", want)
	}
	got := c.Secrets()
	for key, val := range want {
		if !slices.Contains(got, val) {
			t.Errorf("%s is not among Secrets: doctor would print it", key)
		}
	}
}
