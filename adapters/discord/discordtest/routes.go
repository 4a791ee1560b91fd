package discordtest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const api = "/api/v9"

func (s *Server) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+api+"/gateway", s.getGateway)
	mux.HandleFunc("GET "+api+"/gateway/bot", s.getGateway)
	mux.HandleFunc("GET /gateway", s.serveGateway)
	mux.HandleFunc("GET /gateway/{$}", s.serveGateway)
	mux.HandleFunc("GET /resume-gateway", s.serveResumeGateway)
	mux.HandleFunc("GET /resume-gateway/{$}", s.serveResumeGateway)
	mux.HandleFunc("POST "+api+"/interactions/{id}/{token}/callback", s.callback)
	mux.HandleFunc("PATCH "+api+"/webhooks/{app}/{token}/messages/{m}", s.webhookMessage)
	mux.HandleFunc("DELETE "+api+"/webhooks/{app}/{token}/messages/{m}", s.webhookMessage)
	mux.HandleFunc("GET "+api+"/webhooks/{app}/{token}/messages/{m}", s.webhookMessage)
	mux.HandleFunc("POST "+api+"/webhooks/{app}/{token}", s.followUp)
	mux.HandleFunc("GET "+api+"/channels/{c}", s.channel)
	mux.HandleFunc("POST "+api+"/channels/{c}/messages", s.createMessage)
	mux.HandleFunc("GET "+api+"/channels/{c}/messages", s.channelMessages)
	mux.HandleFunc("GET "+api+"/channels/{c}/messages/{m}", s.channelMessage)
	mux.HandleFunc("PATCH "+api+"/channels/{c}/messages/{m}", s.editMessage)
	mux.HandleFunc("POST "+api+"/channels/{c}/messages/{m}/threads", s.startThread)
	mux.HandleFunc("POST "+api+"/channels/{c}/typing", s.typing)
	mux.HandleFunc("PUT "+api+"/channels/{c}/messages/{m}/reactions/{emoji}/@me", s.addReaction)
	mux.HandleFunc("PUT "+api+"/applications/{app}/commands", s.putCommands)
	mux.HandleFunc("PUT "+api+"/applications/{app}/guilds/{g}/commands", s.putCommands)
	mux.HandleFunc("GET /attachments/{id}/{i}/{name}", s.attachment)
	mux.HandleFunc("GET "+api+"/users/@me", s.me)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.record(r, http.StatusNotFound)
		s.mu.Unlock()
		writeError(w, apiError{http.StatusNotFound, 0, "404: Not Found"})
	})
}

// me answers GET /users/@me: the bot's own user, for a bot token.
func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	_, ok := s.begin(w, r, true)
	defer s.mu.Unlock()
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": s.opts.BotUserID, "username": s.opts.BotName, "bot": true})
}

func (s *Server) getGateway(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.record(r, http.StatusOK)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"url": "ws" + strings.TrimPrefix(s.hs.URL, "http") + "/gateway", "shards": 1})
}

// begin records r and answers scripted 429s; it returns the parsed body
// and false when the request was already answered. It locks s.mu; the
// caller unlocks.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, botToken bool) (map[string]any, bool) {
	s.mu.Lock()
	body := s.record(r, http.StatusOK)
	if s.scripted(w, r) {
		return body, false
	}
	if botToken && !s.botAuth(w, r) {
		return body, false
	}
	return body, true
}

func (s *Server) fail(w http.ResponseWriter, e apiError) {
	s.setStatus(e.Status)
	writeError(w, e)
}

var (
	errUnknownInteraction = apiError{http.StatusNotFound, 10062, "Unknown interaction"}
	errAcknowledged       = apiError{http.StatusBadRequest, 40060, "Interaction has already been acknowledged."}
	errUnknownWebhook     = apiError{http.StatusNotFound, 10015, "Unknown Webhook"}
	errInvalidToken       = apiError{http.StatusUnauthorized, 50027, "Invalid Webhook Token"}
	errUnknownMessage     = apiError{http.StatusNotFound, 10008, "Unknown Message"}
	errOtherAuthor        = apiError{http.StatusForbidden, 50005, "Cannot edit a message authored by another user"}
	errChannelType        = apiError{http.StatusBadRequest, 50024, "Cannot execute action on this channel type"}
	errThreadExists       = apiError{http.StatusBadRequest, 160004, "A thread has already been created for this message"}
	errInvalidNonce       = apiError{http.StatusBadRequest, 50035, "Invalid Form Body (nonce: Must be 25 or fewer in length.)"}
)

// nonceLife is how long Discord remembers a message's nonce for
// enforce_nonce ("the past few minutes").
const nonceLife = 5 * time.Minute

// nonceOf returns a create request's nonce (a string or an integer) and
// whether enforce_nonce is set.
func nonceOf(body map[string]any) (string, bool) {
	enforce, _ := body["enforce_nonce"].(bool)
	switch n := body["nonce"].(type) {
	case string:
		return n, enforce
	case float64:
		return strconv.FormatFloat(n, 'f', -1, 64), enforce
	}
	return "", enforce
}

func (s *Server) callback(w http.ResponseWriter, r *http.Request) {
	body, ok := s.begin(w, r, false)
	defer s.mu.Unlock()
	if !ok {
		return
	}
	in := s.interactions[r.PathValue("id")]
	if in == nil || in.Token != r.PathValue("token") || time.Since(in.Created) > s.opts.CallbackDeadline {
		s.fail(w, errUnknownInteraction)
		return
	}
	if in.Callback != 0 {
		s.fail(w, errAcknowledged)
		return
	}
	typ, _ := body["type"].(float64)
	data, _ := body["data"].(map[string]any)
	content, _ := data["content"].(string)
	flags, _ := data["flags"].(float64)
	switch {
	case typ == 7 && in.Message != "":
		// UPDATE_MESSAGE: the clicked message changes; no new message.
		m := s.messages[in.Message]
		if m == nil {
			s.fail(w, errUnknownMessage)
			return
		}
		if _, has := data["content"]; has {
			if !contentOK(w, content) {
				s.setStatus(http.StatusBadRequest)
				return
			}
			s.edit(m, content)
		}
		if c, has := data["components"]; has {
			b, _ := json.Marshal(c)
			m.Components = string(b)
		}
		in.Callback, in.CallbackAt = 7, time.Now()
		s.setStatus(http.StatusNoContent)
		w.WriteHeader(http.StatusNoContent)
		return
	case typ == 4, typ == 5:
	default:
		s.fail(w, apiError{http.StatusBadRequest, 50035, "Invalid Form Body: type"})
		return
	}
	if !contentOK(w, content) {
		s.setStatus(http.StatusBadRequest)
		return
	}
	in.Callback, in.CallbackFlags, in.CallbackAt = int(typ), int(flags), time.Now()
	m := s.addMessage(in.ChannelID, content, "")
	m.GuildID, m.Flags, m.Interaction, m.Original, m.Deferred = in.GuildID, int(flags), in.ID, true, typ == 5
	in.Original = m.ID
	s.setStatus(http.StatusNoContent)
	w.WriteHeader(http.StatusNoContent)
}

// tokenInteraction resolves a webhook route's interaction, answering the
// error when it cannot be used. Call with s.mu held.
func (s *Server) tokenInteraction(w http.ResponseWriter, r *http.Request) *Interaction {
	in := s.byToken[r.PathValue("token")]
	if in == nil || r.PathValue("app") != s.opts.AppID {
		s.fail(w, errUnknownWebhook)
		return nil
	}
	if time.Since(in.Created) >= s.opts.TokenLife {
		s.fail(w, errInvalidToken)
		return nil
	}
	return in
}

func (s *Server) webhookMessage(w http.ResponseWriter, r *http.Request) {
	body, ok := s.begin(w, r, false)
	defer s.mu.Unlock()
	if !ok {
		return
	}
	in := s.tokenInteraction(w, r)
	if in == nil {
		return
	}
	id := r.PathValue("m")
	if id == "@original" {
		id = in.Original
	}
	m := s.messages[id]
	if m == nil || m.Interaction != in.ID || m.Deleted {
		s.fail(w, errUnknownMessage)
		return
	}
	switch r.Method {
	case http.MethodDelete:
		m.Deleted = true
		s.setStatus(http.StatusNoContent)
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodPatch:
		content, has := body["content"].(string)
		if has && !contentOK(w, content) {
			s.setStatus(http.StatusBadRequest)
			return
		}
		if m.Flags&64 == 0 && !s.budget(w, m.ChannelID) { // ephemeral messages are not in the channel
			return
		}
		if has {
			s.edit(m, content)
		}
	}
	writeJSON(w, http.StatusOK, s.messageJSON(m))
}

func (s *Server) followUp(w http.ResponseWriter, r *http.Request) {
	body, ok := s.begin(w, r, false)
	defer s.mu.Unlock()
	if !ok {
		return
	}
	in := s.tokenInteraction(w, r)
	if in == nil {
		return
	}
	content, _ := body["content"].(string)
	flags, _ := body["flags"].(float64)
	if !contentOK(w, content) {
		s.setStatus(http.StatusBadRequest)
		return
	}
	if int(flags)&64 == 0 && !s.budget(w, in.ChannelID) {
		return
	}
	m := s.addMessage(in.ChannelID, content, "")
	m.GuildID, m.Flags, m.Interaction = in.GuildID, int(flags), in.ID
	if r.URL.Query().Get("wait") != "true" {
		s.setStatus(http.StatusNoContent)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, s.messageJSON(m))
}

func (s *Server) createMessage(w http.ResponseWriter, r *http.Request) {
	body, ok := s.begin(w, r, true)
	defer s.mu.Unlock()
	if !ok {
		return
	}
	c := r.PathValue("c")
	content, _ := body["content"].(string)
	if !contentOK(w, content) {
		s.setStatus(http.StatusBadRequest)
		return
	}
	nonce, enforce := nonceOf(body)
	if len(nonce) > 25 {
		s.fail(w, errInvalidNonce)
		return
	}
	if !s.budget(w, c) {
		return
	}
	// With enforce_nonce, a nonce the bot used in this channel within the
	// last few minutes answers the message it made, and makes none.
	key := c + "/" + nonce
	if enforce && nonce != "" {
		if m := s.messages[s.nonces[key]]; m != nil && time.Since(m.At) < nonceLife {
			writeJSON(w, http.StatusOK, s.messageJSON(m))
			return
		}
	}
	var replyTo string
	if ref, ok := body["message_reference"].(map[string]any); ok {
		replyTo, _ = ref["message_id"].(string)
	}
	files := s.calls[len(s.calls)-1].Files
	if content == "" && len(files) == 0 {
		s.fail(w, apiError{http.StatusBadRequest, 50006, "Cannot send an empty message"})
		return
	}
	if !filesOK(w, files) {
		s.setStatus(http.StatusRequestEntityTooLarge)
		return
	}
	m := s.addMessage(c, content, replyTo)
	m.Files = files
	if comps, has := body["components"]; has {
		b, _ := json.Marshal(comps)
		m.Components = string(b)
	}
	if enforce && nonce != "" {
		s.nonces[key] = m.ID
	}
	writeJSON(w, http.StatusOK, s.messageJSON(m))
}

func (s *Server) editMessage(w http.ResponseWriter, r *http.Request) {
	body, ok := s.begin(w, r, true)
	defer s.mu.Unlock()
	if !ok {
		return
	}
	m := s.messages[r.PathValue("m")]
	if m == nil || m.Deleted || m.ChannelID != r.PathValue("c") || m.Flags&64 != 0 {
		s.fail(w, errUnknownMessage)
		return
	}
	if m.AuthorID != s.opts.BotUserID || (m.Interaction != "" && !s.opts.InteractionMessagesBotEditable) {
		s.fail(w, errOtherAuthor)
		return
	}
	content, has := body["content"].(string)
	if has && !contentOK(w, content) {
		s.setStatus(http.StatusBadRequest)
		return
	}
	if !s.budget(w, m.ChannelID) {
		return
	}
	if has {
		s.edit(m, content)
	}
	if comps, ok := body["components"]; ok {
		b, _ := json.Marshal(comps)
		m.Components = string(b)
	}
	writeJSON(w, http.StatusOK, s.messageJSON(m))
}

func (s *Server) startThread(w http.ResponseWriter, r *http.Request) {
	body, ok := s.begin(w, r, true)
	defer s.mu.Unlock()
	if !ok {
		return
	}
	c := r.PathValue("c")
	if s.dms[c] {
		s.fail(w, errChannelType)
		return
	}
	m := s.messages[r.PathValue("m")]
	if m == nil || m.Deleted || m.ChannelID != c {
		s.fail(w, errUnknownMessage)
		return
	}
	if m.Thread != "" {
		s.fail(w, errThreadExists)
		return
	}
	if !s.budget(w, c) {
		return
	}
	s.openThread(m)
	name, _ := body["name"].(string)
	s.setStatus(http.StatusCreated)
	writeJSON(w, http.StatusCreated, map[string]any{"id": m.ID, "type": 11, "parent_id": c, "guild_id": m.GuildID, "name": name})
}

// NameChannel gives a channel the name GET /channels/{c} answers.
func (s *Server) NameChannel(id, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names[id] = name
}

// channel answers GET /channels/{c}: a channel NameChannel named, 404
// for another.
func (s *Server) channel(w http.ResponseWriter, r *http.Request) {
	_, ok := s.begin(w, r, true)
	defer s.mu.Unlock()
	if !ok {
		return
	}
	name, known := s.names[r.PathValue("c")]
	if !known {
		s.fail(w, apiError{http.StatusNotFound, 10003, "Unknown Channel"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": r.PathValue("c"), "type": 0, "name": name})
}

func (s *Server) typing(w http.ResponseWriter, r *http.Request) {
	_, ok := s.begin(w, r, true)
	defer s.mu.Unlock()
	if !ok {
		return
	}
	s.setStatus(http.StatusNoContent)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) putCommands(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cmds []map[string]any
	err := json.NewDecoder(r.Body).Decode(&cmds)
	s.calls = append(s.calls, Call{Method: r.Method, Path: strings.TrimPrefix(r.URL.Path, api), Body: map[string]any{"commands": cmds}, Status: http.StatusOK, At: time.Now()})
	s.notify()
	if s.scripted(w, r) || !s.botAuth(w, r) {
		return
	}
	if err != nil || r.PathValue("app") != s.opts.AppID {
		s.fail(w, apiError{http.StatusBadRequest, 50035, "Invalid Form Body"})
		return
	}
	for i, c := range cmds {
		c["id"] = s.newID()
		c["application_id"] = s.opts.AppID
		cmds[i] = c
	}
	s.commands[r.PathValue("g")] = cmds
	writeJSON(w, http.StatusOK, cmds)
}

func (s *Server) attachment(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	data, ok := s.files[r.PathValue("id")+"/"+r.PathValue("i")]
	if ok {
		s.record(r, http.StatusOK)
	}
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(data)
}

// addMessage stores a new message by the bot. Call with s.mu held.
func (s *Server) addMessage(channel, content, replyTo string) *Message {
	m := &Message{ID: s.newID(), ChannelID: channel, Content: content, AuthorID: s.opts.BotUserID, ReplyTo: replyTo, At: time.Now()}
	if parent, ok := s.threads[channel]; ok {
		if p := s.messages[parent]; p != nil {
			m.GuildID = p.GuildID
		}
	}
	if content != "" {
		m.History = []string{content}
	}
	s.messages[m.ID] = m
	s.order = append(s.order, m.ID)
	s.notify()
	return m
}

// edit replaces m's content. Call with s.mu held.
func (s *Server) edit(m *Message, content string) {
	m.Content = content
	m.Deferred = false
	m.Edits++
	m.History = append(m.History, content)
	s.notify()
}
