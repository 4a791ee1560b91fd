package slack

import (
	"context"
	"errors"
	"fmt"

	slackapi "github.com/slack-go/slack"

	"github.com/golem-chat/golem/core"
	"github.com/golem-chat/golem/internal/retry"
)

// MaxUpload is the largest file Slack takes, 1 GB.
const MaxUpload = 1 << 30

// Upload implements core.Uploader with files upload v2, in the answer's
// thread: files.getUploadURLExternal, the bytes to the upload URL it
// gives, files.completeUploadExternal to share it. The first two steps
// are retried (a second URL or a second upload of the same bytes shares
// nothing); the last shares the file, so like a post it waits for the
// channel's pace and is not repeated after a failure that may have landed.
func (a *Adapter) Upload(ctx context.Context, answer core.MessageRef, f core.File) error {
	if f.Size <= 0 {
		return errors.New("slack: upload: Slack takes no empty files")
	}
	thread := answer.Thread
	if thread == "" {
		thread = answer.ID
	}
	var u *slackapi.GetUploadURLExternalResponse
	err := a.do(ctx, "files.getUploadURLExternal", func(ctx context.Context) error {
		var err error
		u, err = a.api.GetUploadURLExternalContext(ctx, slackapi.GetUploadURLExternalParameters{FileName: f.Name, FileSize: int(f.Size)})
		return err
	})
	if err != nil {
		return fmt.Errorf("slack: upload %s: %w", f.Name, err)
	}
	err = a.do(ctx, "files.upload", func(ctx context.Context) error {
		in, err := f.Open()
		if err != nil {
			return err
		}
		defer in.Close()
		return a.api.UploadToURL(ctx, slackapi.UploadToURLParameters{UploadURL: u.UploadURL, Reader: in, Filename: f.Name})
	})
	if err != nil {
		return fmt.Errorf("slack: upload %s: %w", f.Name, err)
	}
	call := retry.Call{Method: "files.completeUploadExternal",
		Before: func(ctx context.Context) (func(), error) { return nil, a.posts.wait(ctx, answer.Channel) }}
	err = a.retry.Do(ctx, call, func(ctx context.Context) error {
		_, err := a.api.CompleteUploadExternalContext(ctx, slackapi.CompleteUploadExternalParameters{
			Files: []slackapi.FileSummary{{ID: u.FileID, Title: f.Name}}, Channel: answer.Channel, ThreadTimestamp: thread})
		return err
	})
	if err != nil {
		return fmt.Errorf("slack: share %s: %w", f.Name, err)
	}
	return nil
}
