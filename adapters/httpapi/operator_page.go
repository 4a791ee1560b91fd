package httpapi

import (
	"context"
	"net/http"
	"time"
)

// DoctorLine is one line of `bot doctor`, for the operator's page.
type DoctorLine struct {
	Verdict string `json:"verdict"` // ok, --, FAIL
	Name    string `json:"name"`
	Text    string `json:"text"` // the secrets hidden
}

// usageDays is how many days GET /v1/usage/daily reports.
const usageDays = 30

// dailyUsage answers GET /v1/usage/daily: everyone's usage on each of the
// last 30 UTC days, oldest first.
func (s *Server) dailyUsage(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	days, err := s.opts.Store.DailyUsage(now.AddDate(0, 0, -(usageDays-1)), now)
	if err != nil {
		s.log.Error("http: read daily usage", "err", err)
		writeError(w, http.StatusServiceUnavailable, "the store cannot be read now: "+err.Error())
		return
	}
	type day struct {
		Day string `json:"day"`
		usageJSON
	}
	out := struct {
		Days []day `json:"days"`
	}{Days: make([]day, 0, len(days))}
	for _, d := range days {
		out.Days = append(out.Days, day{Day: d.Day, usageJSON: usageOf(d.Usage)})
	}
	writeJSON(w, out)
}

// doctor answers GET /v1/doctor: `bot doctor`'s checks, run now.
func (s *Server) doctor(w http.ResponseWriter, r *http.Request) {
	if s.opts.Doctor == nil {
		writeError(w, http.StatusNotFound, "this server runs no doctor")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	lines := s.opts.Doctor(ctx)
	if lines == nil {
		lines = []DoctorLine{}
	}
	writeJSON(w, struct {
		Lines []DoctorLine `json:"lines"`
	}{lines})
}
