package discord

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/bwmarrin/discordgo"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/retry"
)

// MaxUpload is what a bot may attach to a message in a server without
// boosts, 10 MiB.
const MaxUpload = 10 << 20

// Upload implements core.Uploader: the file as an attachment of a message
// in the answer's thread (the one tool activity uses, started on the
// answer when it has none), or as a reply to the answer where threads are
// not possible (a DM). Like every channel message it carries a nonce with
// enforce_nonce, so a retry after a failure that landed posts nothing new.
func (a *Adapter) Upload(ctx context.Context, answer core.MessageRef, f core.File) error {
	in, err := f.Open()
	if err != nil {
		return fmt.Errorf("discord: upload %s: %w", f.Name, err)
	}
	data, err := io.ReadAll(in)
	in.Close()
	if err != nil {
		return fmt.Errorf("discord: upload %s: %w", f.Name, err)
	}
	channel, replyTo := a.activityPlace(ctx, answer)
	msg := messageCreate{MessageSend: &discordgo.MessageSend{AllowedMentions: noMentions},
		Nonce: newNonce(), EnforceNonce: true}
	if replyTo != "" {
		no := false
		msg.Reference = &discordgo.MessageReference{MessageID: replyTo, ChannelID: channel, FailIfNotExists: &no}
	}
	files := []*discordgo.File{{Name: f.Name, ContentType: "application/octet-stream", Reader: bytes.NewReader(data)}}
	uri := discordgo.EndpointChannelMessages(channel)
	return a.request(ctx, channel, retry.Call{Method: "post attachment", Idempotent: true}, func(opts ...discordgo.RequestOption) error {
		files[0].Reader = bytes.NewReader(data) // a retry sends the bytes again
		contentType, body, err := discordgo.MultipartBodyWithJSON(msg, files)
		if err != nil {
			return err
		}
		_, err = a.session.RequestRaw(http.MethodPost, uri, contentType, body, uri, 0, opts...)
		return err
	})
}

// activityPlace is where things go under answer: its thread (started now
// if needed), or the answer's channel as a reply to it.
func (a *Adapter) activityPlace(ctx context.Context, answer core.MessageRef) (channel, replyTo string) {
	a.mu.Lock()
	flat := a.flat[answer.Channel]
	thread := a.threads[answer.ID]
	a.mu.Unlock()
	if !flat && thread == "" {
		var err error
		if thread, err = a.startThread(ctx, answer); err != nil {
			a.log.Warn("start activity thread; replying in the channel", "err", err)
		}
	}
	if thread == "" {
		return answer.Channel, answer.ID
	}
	return thread, ""
}
