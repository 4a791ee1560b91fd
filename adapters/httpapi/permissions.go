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
	"github.com/golem-chat/golem/store"
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
// request that a conversation's stream showed, or, with the operator's
// view on, any conversation's request by the conversation's key (e.g.
// "slack:T1:C1"), decided as core.Operator. 200 {"ok":true} when it
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
	option := -1
	if req.Option != nil {
		if verb != "allow" || *req.Option < 0 {
			writeError(w, http.StatusBadRequest, `"option" goes with decision allow and is at least 0`)
			return
		}
		option = *req.Option
		data = "golem:pick:" + req.ID + ":" + strconv.Itoa(*req.Option)
	}
	var res core.ActionResult
	key, err := store.ParseKey(req.Conversation)
	byKey := err == nil && s.opts.Operator != nil
	if byKey { // a conversation's key, as /v1/conversations lists it: any platform's
		res = s.opts.Operator.Decide(r.Context(), key, req.ID, req.Decision, option)
		byKey = !errors.Is(res.Err, core.ErrUnknownRequest)
	}
	if byKey {
		if res.Err == nil {
			s.record(key, req.Decision, res.Settled)
		}
	} else { // an HTTP conversation by its id
		res = h.HandleAction(r.Context(), core.Action{
			Platform: "http", Channel: req.Conversation, Thread: req.Conversation, User: "http", Data: data,
		})
	}
	switch {
	case res.Err == nil:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}` + "\n"))
	case errors.Is(res.Err, core.ErrDecided):
		writeError(w, http.StatusConflict, res.Refusal)
	case errors.Is(res.Err, core.ErrNotApprover):
		writeError(w, http.StatusForbidden, res.Refusal)
	case !errors.Is(res.Err, core.ErrUnknownRequest): // the replica whose turn asked did not answer
		writeError(w, http.StatusServiceUnavailable, res.Refusal)
	default:
		writeError(w, http.StatusNotFound, "no such permission request in this conversation")
	}
}
