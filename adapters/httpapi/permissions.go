package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/golem-chat/golem/core"
)

// permissionRequest is the body of POST /v1/permissions.
type permissionRequest struct {
	Conversation string `json:"conversation"`
	ID           string `json:"id"`
	Decision     string `json:"decision"` // allow | allow_session | deny
	// Option answers an AskUserQuestion with its option of this index
	// (with decision allow); the web page's buttons send it.
	Option *int `json:"option,omitempty"`
}

// decisionVerbs maps the API's decisions to the data of golem's buttons.
var decisionVerbs = map[string]string{"allow": "allow", "allow_session": "session", "deny": "deny"}

// permissions answers POST /v1/permissions: the decision on a permission
// request that a conversation's stream showed. 200 {"ok":true} when it
// decided the request; 404 for an unknown id or one of another
// conversation; 409 when it was already decided; 400 for a body that is
// not JSON or an unknown decision; 415 without a JSON content type.
func (s *Server) permissions(h core.Handler, w http.ResponseWriter, r *http.Request) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "the body must be JSON (Content-Type: application/json)")
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
	var req permissionRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10))
	dec.DisallowUnknownFields()
	err := dec.Decode(&req)
	if err == nil && dec.Decode(&struct{}{}) != io.EOF {
		err = errors.New("more than one JSON value")
	}
	verb, known := decisionVerbs[req.Decision]
	switch {
	case err != nil:
		writeError(w, http.StatusBadRequest, "bad JSON body: "+err.Error())
		return
	case req.Conversation == "" || req.ID == "":
		writeError(w, http.StatusBadRequest, `"conversation" and "id" are required`)
		return
	case !known:
		writeError(w, http.StatusBadRequest, `"decision" must be allow, allow_session or deny`)
		return
	}
	data := "golem:" + verb + ":" + req.ID
	if req.Option != nil {
		if verb != "allow" || *req.Option < 0 {
			writeError(w, http.StatusBadRequest, `"option" goes with decision allow and is at least 0`)
			return
		}
		data = "golem:pick:" + req.ID + ":" + strconv.Itoa(*req.Option)
	}
	res := h.HandleAction(r.Context(), core.Action{
		Platform: "http", Channel: req.Conversation, Thread: req.Conversation, User: "http", Data: data,
	})
	switch {
	case res.Err == nil:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}` + "\n"))
	case errors.Is(res.Err, core.ErrDecided):
		writeError(w, http.StatusConflict, res.Refusal)
	case errors.Is(res.Err, core.ErrNotApprover):
		writeError(w, http.StatusForbidden, res.Refusal)
	default:
		writeError(w, http.StatusNotFound, "no such permission request in this conversation")
	}
}
