package telegram

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/golem-chat/golem/core"
)

// MaxUpload is the largest file a bot may send, 50 MB; MaxPhoto the
// largest photo, 10 MB (a bigger image goes as a document).
const (
	MaxUpload = 50 << 20
	MaxPhoto  = 10 << 20
)

// photoExts are the images Telegram shows as photos.
var photoExts = map[string]bool{".jpg": true, ".jpeg": true, ".png": true, ".webp": true}

// Upload implements core.Uploader: the file as a reply to the answer,
// with sendPhoto for an image up to MaxPhoto (shown inline) and
// sendDocument otherwise, or when Telegram refuses it as a photo. It takes
// from the chat's budget like any message and is not repeated after a
// failure that may have landed (a file sent twice is worse than a note
// that it was not).
func (a *Adapter) Upload(ctx context.Context, answer core.MessageRef, f core.File) error {
	chat, err := parseID(answer.Channel)
	if err != nil {
		return fmt.Errorf("telegram: upload: channel %q: %w", answer.Channel, err)
	}
	p := tgbotapi.Params{"chat_id": answer.Channel, "reply_to_message_id": answer.ID, "allow_sending_without_reply": "true"}
	if answer.Thread != "" {
		p["message_thread_id"] = answer.Thread
	}
	if photoExts[strings.ToLower(filepath.Ext(f.Name))] && f.Size <= MaxPhoto {
		err = a.sendFile(ctx, chat, "sendPhoto", "photo", p, f)
		if te, ok := apiError(err); !ok || te.Code != 400 {
			return err
		}
		a.log.Info("telegram: image refused as a photo; sending it as a document", "err", err)
	}
	return a.sendFile(ctx, chat, "sendDocument", "document", p, f)
}

func (a *Adapter) sendFile(ctx context.Context, chat int64, method, field string, p tgbotapi.Params, f core.File) error {
	api, err := a.connected(ctx)
	if err != nil {
		return err
	}
	call := a.inBudget(chat, method, classMust, nil)
	err = a.retry.Do(ctx, call, func(ctx context.Context) error {
		in, err := f.Open()
		if err != nil {
			return err // a sendFile that is not idempotent is not repeated
		}
		defer in.Close()
		_, err = api.upload(ctx, method, p, []tgbotapi.RequestFile{{Name: field, Data: tgbotapi.FileReader{Name: f.Name, Reader: in}}})
		return err
	})
	if err != nil {
		return fmt.Errorf("telegram: %s %s: %w", method, f.Name, err)
	}
	return nil
}
