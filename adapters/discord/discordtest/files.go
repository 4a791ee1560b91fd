package discordtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// MaxUpload is the most a bot may attach to one message without a boosted
// server: 10 MiB.
const MaxUpload = 10 << 20

// File is a file attached to a multipart message create.
type File struct {
	Field string // the form field, "files[0]"
	Name  string // its filename
	Data  []byte
}

// readMultipart reads a multipart request as Discord does: the JSON body
// is the payload_json part, files are the files[N] parts.
func readMultipart(r *http.Request) (map[string]any, []File) {
	if err := r.ParseMultipartForm(2 * MaxUpload); err != nil {
		return nil, nil
	}
	var body map[string]any
	if p := r.MultipartForm.Value["payload_json"]; len(p) > 0 {
		_ = json.Unmarshal([]byte(p[0]), &body)
	}
	var files []File
	for field, fhs := range r.MultipartForm.File {
		if !strings.HasPrefix(field, "files[") && field != "file" {
			continue
		}
		for _, fh := range fhs {
			f, err := fh.Open()
			if err != nil {
				continue
			}
			data, _ := io.ReadAll(f)
			f.Close()
			files = append(files, File{Field: field, Name: fh.Filename, Data: data})
		}
	}
	return body, files
}

// filesOK checks the upload limit, answering 413 as Discord does.
func filesOK(w http.ResponseWriter, files []File) bool {
	total := 0
	for _, f := range files {
		total += len(f.Data)
	}
	if total > MaxUpload {
		writeError(w, apiError{http.StatusRequestEntityTooLarge, 40005, fmt.Sprintf("Request entity too large (%d bytes)", total)})
		return false
	}
	return true
}
