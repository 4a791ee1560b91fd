package discordtest

import (
	"strconv"
	"time"
)

// Attachment is a file on a user's message; the fake serves Data at the
// attachment's URL.
type Attachment struct {
	Name string
	Data []byte
}

// UserMessage describes a message a user posts, for Post.
type UserMessage struct {
	Channel  string
	Guild    string // empty in a DM (mark the channel with DM)
	User     string
	UserName string // the username; default "user<User>"
	// GlobalName is the user's display name (global_name); Nick their
	// nickname in the guild, which only the gateway's member object
	// carries. Empty: none.
	GlobalName, Nick string
	Bot              bool // the author is a bot
	Content          string
	// Mentions lists the user ids the message mentions (put "<@id>" in
	// Content too, as Discord does); MentionRoles the role ids ("<@&id>").
	Mentions     []string
	MentionRoles []string
	// ReplyTo is the id of a message this one replies to.
	ReplyTo     string
	Attachments []Attachment
}

// Post stores m as a user's message in its channel (where GET
// /channels/{id}/messages finds it), dispatches MESSAGE_CREATE for it and
// returns its id. The event carries the author's member object (with its
// nick) in a guild, and the replied-to message as referenced_message.
func (s *Server) Post(m UserMessage) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := m.UserName
	if name == "" {
		name = "user" + m.User
	}
	s.users[m.User] = user{name: name, global: m.GlobalName, bot: m.Bot}
	msg := &Message{ID: s.newID(), ChannelID: m.Channel, GuildID: m.Guild, Content: m.Content, AuthorID: m.User,
		Mentions: m.Mentions, MentionRoles: m.MentionRoles, Attachments: m.Attachments, ReplyTo: m.ReplyTo, At: time.Now()}
	if m.ReplyTo != "" {
		msg.Type = 19
	}
	for i, a := range m.Attachments {
		s.files[msg.ID+"/"+strconv.Itoa(i)] = a.Data
	}
	s.messages[msg.ID] = msg
	s.order = append(s.order, msg.ID)
	d := s.messageJSON(msg)
	if m.ReplyTo != "" && s.messages[m.ReplyTo] == nil {
		delete(d, "referenced_message") // Discord would have refused the reply
	}
	if m.Guild != "" {
		member := map[string]any{"roles": []any{}}
		if m.Nick != "" {
			member["nick"] = m.Nick
		}
		d["member"] = member
	}
	_ = s.dispatchLocked("MESSAGE_CREATE", d)
	s.notify()
	return msg.ID
}

// Option is one slash-command option (a string).
type Option struct {
	Name, Value string
}

// Slash describes a slash command a user runs, for Command.
type Slash struct {
	Channel  string
	Guild    string // empty in a DM
	User     string
	UserName string
	Name     string // the command, without "/"
	Options  []Option
}

// Command dispatches INTERACTION_CREATE (type 2, application command) for
// c and returns the interaction's id; its token starts its life now.
func (s *Server) Command(c Slash) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.newID()
	in := &Interaction{ID: id, Token: "itoken-" + id, ChannelID: c.Channel, GuildID: c.Guild, UserID: c.User, Name: c.Name, Created: time.Now()}
	s.interactions[id] = in
	s.byToken[in.Token] = in
	opts := []any{}
	for _, o := range c.Options {
		opts = append(opts, map[string]any{"name": o.Name, "type": 3, "value": o.Value})
	}
	d := map[string]any{
		"id": id, "application_id": s.opts.AppID, "type": 2, "token": in.Token, "version": 1,
		"channel_id": c.Channel,
		"data":       map[string]any{"id": "cmd-" + c.Name, "name": c.Name, "type": 1, "options": opts},
	}
	s.dispatchInteractionLocked(d, c.Guild, c.User, c.UserName)
	return id
}

// Click is a click on a button of the bot's message.
type Click struct {
	Guild, Channel string // where the message is
	Message        string // the message's id
	User, UserName string
	CustomID       string
}

// Click dispatches a component interaction (type 3) for c and returns its
// id; its callback (type 7 updates the message, type 4 answers) shows in
// Interactions.
func (s *Server) Click(c Click) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.newID()
	in := &Interaction{ID: id, Token: "itoken-" + id, ChannelID: c.Channel, GuildID: c.Guild, UserID: c.User,
		Created: time.Now(), Message: c.Message}
	s.interactions[id] = in
	s.byToken[in.Token] = in
	d := map[string]any{
		"id": id, "application_id": s.opts.AppID, "type": 3, "token": in.Token, "version": 1,
		"channel_id": c.Channel,
		"message":    map[string]any{"id": c.Message, "channel_id": c.Channel, "content": "", "timestamp": time.Now().Format(time.RFC3339)},
		"data":       map[string]any{"custom_id": c.CustomID, "component_type": 2},
	}
	s.dispatchInteractionLocked(d, c.Guild, c.User, c.UserName)
	return id
}

// dispatchInteractionLocked sends interaction d as INTERACTION_CREATE from
// user (a guild member in guild, else a DM's user). Call with s.mu held.
func (s *Server) dispatchInteractionLocked(d map[string]any, guild, userID, userName string) {
	if userName == "" {
		userName = "user" + userID
	}
	user := map[string]any{"id": userID, "username": userName}
	if guild != "" {
		d["guild_id"] = guild
		d["member"] = map[string]any{"user": user, "roles": []any{}}
	} else {
		d["user"] = user
	}
	_ = s.dispatchLocked("INTERACTION_CREATE", d)
}
