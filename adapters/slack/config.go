package slack

// DefaultAPIURL is Slack's own base URL.
const DefaultAPIURL = "https://slack.com/api/"

// Config is the slack: section of bot.yaml. Slack is on when both tokens
// are set.
type Config struct {
	BotToken string `yaml:"bot_token"` // "xoxb-..."
	AppToken string `yaml:"app_token"` // "xapp-...", with connections:write
	APIURL   string `yaml:"api_url"`   // see Options.APIURL
	// Streaming is how answers grow: "edits" (the default) or "native";
	// see Options.Streaming.
	Streaming string `yaml:"streaming"`
}

// Secrets are the section's values that no output may show.
func (c Config) Secrets() []string { return []string{c.BotToken, c.AppToken} }
