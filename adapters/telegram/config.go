package telegram

import (
	"errors"
	"fmt"
)

// Config is the telegram: section of bot.yaml. Telegram is on when Token
// is set.
type Config struct {
	Token  string `yaml:"token"`   // from BotFather
	APIURL string `yaml:"api_url"` // default DefaultAPIURL; a local Bot API server works
	Drafts bool   `yaml:"drafts"`  // live drafts in private chats (Bot API 9.5+); see Options.Drafts
	Memory Memory `yaml:"memory"`  // what is kept of group messages for the chat context
}

// Memory bounds what the adapter keeps in memory of the messages it sees
// in groups whose privacy mode is off, for the chat context: per chat or
// forum topic at most Messages messages and ChatBytes bytes (the oldest go
// first), in all TotalBytes (the chats used least recently go first). A
// zero field takes its default; Messages below 0 keeps nothing.
type Memory struct {
	Messages   int `yaml:"messages"`    // default 100
	ChatBytes  int `yaml:"chat_bytes"`  // default 65536
	TotalBytes int `yaml:"total_bytes"` // default 8388608
}

// DefaultMemory keeps more than context.max_messages' and max_chars'
// defaults (20, 8,000) need, and 8 MiB at most whatever the groups say.
var DefaultMemory = Memory{Messages: 100, ChatBytes: 64 << 10, TotalBytes: 8 << 20}

// Check names the first bad bound by its key under telegram.memory.
func (m Memory) Check() error {
	switch {
	case m.ChatBytes < 0:
		return errors.New("telegram.memory.chat_bytes: must not be negative (0 is the default, 65536)")
	case m.TotalBytes < 0:
		return errors.New("telegram.memory.total_bytes: must not be negative (0 is the default, 8388608)")
	case m.ChatBytes > 0 && m.TotalBytes > 0 && m.ChatBytes > m.TotalBytes:
		return fmt.Errorf("telegram.memory.chat_bytes: %d is more than total_bytes, %d", m.ChatBytes, m.TotalBytes)
	}
	return nil
}

// withDefaults is m with each zero field its default.
func (m Memory) withDefaults() Memory {
	if m.Messages == 0 {
		m.Messages = DefaultMemory.Messages
	}
	if m.ChatBytes == 0 {
		m.ChatBytes = DefaultMemory.ChatBytes
	}
	if m.TotalBytes == 0 {
		m.TotalBytes = DefaultMemory.TotalBytes
	}
	m.ChatBytes = min(m.ChatBytes, m.TotalBytes)
	return m
}

// Secrets are the section's values that no output may show.
func (c Config) Secrets() []string { return []string{c.Token} }
