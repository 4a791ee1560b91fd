package discord

// DefaultAPIURL is Discord's own base URL; the API is under /api/v9.
const DefaultAPIURL = "https://discord.com"

// Config is the discord: section of bot.yaml. Discord is on when Token is
// set.
type Config struct {
	Token  string   `yaml:"token"`   // the bot token, without "Bot "
	APIURL string   `yaml:"api_url"` // default DefaultAPIURL
	Guilds []string `yaml:"guilds"`  // register slash commands per guild (instant) instead of globally
}

// Secrets are the section's values that no output may show.
func (c Config) Secrets() []string { return []string{c.Token} }
