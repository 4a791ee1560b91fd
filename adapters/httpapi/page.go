package httpapi

import (
	"bytes"
	"embed"
	"errors"
	"net/http"
)

// web holds the chat page and the operator's page. It loads nothing from elsewhere: no CDN, no
// fonts, no external scripts, which the Content-Security-Policy enforces.
//
//go:embed web/index.html web/app.js web/style.css web/admin.html web/admin.js web/admin.css
var web embed.FS

// authPlaceholder in index.html becomes "required" or "none", telling the
// page whether to ask for the token.
const authPlaceholder = "{{AUTH}}"

const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// adminPlaceholder in index.html becomes "hidden" when the server has no
// operator's page to link to.
const adminPlaceholder = "{{ADMIN}}"

// renderPage fills the auth flag into a page, and the link to the
// operator's page where there is one.
func renderPage(name string, tokenRequired, admin bool) ([]byte, error) {
	b, err := web.ReadFile(name)
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(b, []byte(authPlaceholder)) {
		return nil, errors.New(name + " has no auth placeholder")
	}
	flag := "none"
	if tokenRequired {
		flag = "required"
	}
	hidden := "hidden"
	if admin {
		hidden = ""
	}
	b = bytes.ReplaceAll(b, []byte(adminPlaceholder), []byte(hidden))
	return bytes.ReplaceAll(b, []byte(authPlaceholder), []byte(flag)), nil
}

// pageRoutes serves the chat page and its two assets, and, with the
// operator's view, the operator's page at /admin and its own. The page itself holds no
// secret, so it is served without a token; the API it calls is guarded.
func (s *Server) pageRoutes(mux *http.ServeMux) {
	asset := func(contentType string, body func() []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("Content-Type", contentType)
			h.Set("Cache-Control", "no-cache")
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Referrer-Policy", "no-referrer")
			h.Set("Content-Security-Policy", pageCSP)
			_, _ = w.Write(body())
		}
	}
	file := func(name string) func() []byte {
		b, _ := web.ReadFile(name) // embedded; present by construction
		return func() []byte { return b }
	}
	mux.HandleFunc("GET /{$}", asset("text/html; charset=utf-8", func() []byte { return s.page }))
	mux.HandleFunc("GET /app.js", asset("text/javascript; charset=utf-8", file("web/app.js")))
	mux.HandleFunc("GET /style.css", asset("text/css; charset=utf-8", file("web/style.css")))
	if s.admin != nil { // the operator's page
		mux.HandleFunc("GET /admin", asset("text/html; charset=utf-8", func() []byte { return s.admin }))
		mux.HandleFunc("GET /admin.js", asset("text/javascript; charset=utf-8", file("web/admin.js")))
		mux.HandleFunc("GET /admin.css", asset("text/css; charset=utf-8", file("web/admin.css")))
	}
}
