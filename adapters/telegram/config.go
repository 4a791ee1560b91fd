package telegram

// Config is the telegram: section of bot.yaml. Telegram is on when Token
// is set.
type Config struct {
	Token  string `yaml:"token"`   // from BotFather
	APIURL string `yaml:"api_url"` // default DefaultAPIURL; a local Bot API server works
	Drafts bool   `yaml:"drafts"`  // live drafts in private chats (Bot API 9.5+); see Options.Drafts
}
