package slack

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

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
	// ToolActivity is where tool calls show with streaming native:
	// "replies" (the default) or "tasks"; see Options.ToolActivity.
	ToolActivity string `yaml:"tool_activity"`
	// SuggestedPrompts are shown when someone opens the bot's split view;
	// see Options.SuggestedPrompts.
	SuggestedPrompts []Prompt `yaml:"suggested_prompts"`
}

// Prompt is one suggested prompt of the split view: Title is what the
// button says, Message what it sends.
type Prompt struct {
	Title   string `yaml:"title"`
	Message string `yaml:"message"`
}

// MaxSuggestedPrompts is the most prompts Slack shows.
const MaxSuggestedPrompts = 4

// Secrets are the section's values that no output may show.
func (c Config) Secrets() []string { return []string{c.BotToken, c.AppToken} }

// Validate checks the section's choices, naming the key at fault.
func (c Config) Validate() error {
	if s := c.Streaming; s != "" && s != StreamEdits && s != StreamNative {
		return fmt.Errorf("slack.streaming: %q is not edits or native", s)
	}
	if s := c.ToolActivity; s != "" && s != ActivityReplies && s != ActivityTasks {
		return fmt.Errorf("slack.tool_activity: %q is not replies or tasks", s)
	}
	if c.ToolActivity == ActivityTasks && c.Streaming != StreamNative {
		return fmt.Errorf("slack.tool_activity: tasks needs slack.streaming: native (task cards live in a streamed answer)")
	}
	return validPrompts(c.SuggestedPrompts)
}

// validPrompts checks suggested prompts as Slack takes them: at most four,
// each with a title and a message.
func validPrompts(ps []Prompt) error {
	if len(ps) > MaxSuggestedPrompts {
		return fmt.Errorf("slack.suggested_prompts: %d prompts; Slack shows at most %d", len(ps), MaxSuggestedPrompts)
	}
	for i, p := range ps {
		switch {
		case strings.TrimSpace(p.Title) == "":
			return fmt.Errorf("slack.suggested_prompts[%d].title: empty; each prompt needs a title and a message", i)
		case strings.TrimSpace(p.Message) == "":
			return fmt.Errorf("slack.suggested_prompts[%d].message: empty; each prompt needs a title and a message", i)
		case utf8.RuneCountInString(p.Title) > 75:
			return fmt.Errorf("slack.suggested_prompts[%d].title: %d characters; keep it to 75", i, utf8.RuneCountInString(p.Title))
		}
	}
	return nil
}
