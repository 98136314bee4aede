package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"mime"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/web/request"
)

// CSRF (docs/SECURITY.md): a form's token is HMAC(process key, binding), where
// the binding is the session's random id when signed in, and otherwise the
// random value of the CSRFCookie (a signed double-submit cookie: local mode and
// the login form). An attacker can neither read the token nor mint one for a
// cookie value they planted, since the key never leaves the process.
const (
	CSRFField  = "csrf_token"   // the hidden form field
	CSRFHeader = "X-CSRF-Token" // or this header, for scripts
	CSRFCookie = "readpast_csrf"
)

// CSRFToken is the token to put in the CSRFField of every form the page
// renders. Call it before the response body is written: it may set the CSRF
// cookie.
func (a *Guard) CSRFToken(c echo.Context) string {
	m := hmac.New(sha256.New, a.csrfKey)
	m.Write([]byte(a.csrfBinding(c)))
	return b64.EncodeToString(m.Sum(nil))
}

// csrfBinding is what the request's CSRF token is bound to; without a session
// it sets a fresh CSRF cookie when the browser has none.
func (a *Guard) csrfBinding(c echo.Context) string {
	if b, ok := c.Get(ctxCSRFBind).(string); ok {
		return b
	}
	var b string
	if p, ok := principalOf(c); ok && p.Via == viaSession {
		b = "session:" + p.nonce
	} else if ck, err := c.Cookie(CSRFCookie); err == nil && len(ck.Value) >= 16 && len(ck.Value) <= 64 {
		b = "cookie:" + ck.Value
	} else {
		v := randomToken()
		c.SetCookie(Cookie(c, CSRFCookie, v, time.Now().Add(365*24*time.Hour)))
		b = "cookie:" + v
	}
	c.Set(ctxCSRFBind, b)
	return b
}

// CheckCSRF guards every unsafe request (POST, PUT, PATCH, DELETE) that a
// browser could make with ambient authority, i.e. all but those carrying an
// Authorization header (a page cannot add one cross-origin):
//   - cross-origin requests are refused (Sec-Fetch-Site, else Origin vs Host);
//   - forms, and any request riding on a session cookie, must carry the token
//     in CSRFField or the CSRFHeader.
//
// The API never takes form bodies (415), so no cross-site form reaches it.
// Non-browser clients in local mode (curl) send neither Origin nor a form, so
// they pass.
func (a *Guard) CheckCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		if isForm(r) && request.IsAPI(r) {
			return echo.NewHTTPError(http.StatusUnsupportedMediaType, "the API takes JSON: send Content-Type: application/json")
		}
		if r.Header.Get("Authorization") != "" {
			return next(c)
		}
		if err := a.cop.Check(r); err != nil {
			a.log.Warn("refused a cross-origin request", "remote", c.RealIP(), "path", r.URL.Path, "origin", r.Header.Get("Origin"))
			return echo.NewHTTPError(http.StatusForbidden, "forbidden: cross-origin request refused (CSRF protection)")
		}
		p, _ := principalOf(c)
		if !isForm(r) && p.Via != viaSession {
			return next(c)
		}
		got := r.Header.Get(CSRFHeader)
		if got == "" {
			got = c.FormValue(CSRFField)
		}
		if got == "" || !hmac.Equal([]byte(got), []byte(a.CSRFToken(c))) {
			return echo.NewHTTPError(http.StatusForbidden, "forbidden: missing or invalid CSRF token; reload the page and try again")
		}
		return next(c)
	}
}

// isForm reports whether the request body is an HTML form.
func isForm(r *http.Request) bool {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return ct == "application/x-www-form-urlencoded" || ct == "multipart/form-data" || ct == "text/plain"
}

// CheckOrigin is for the websocket upgrader's CheckOrigin: a browser's Origin
// must name this very host (a page elsewhere must not read live updates, nor
// drive a localhost dashboard); clients that send no Origin are not browsers.
func CheckOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := parseOrigin(o)
	return err == nil && u == r.Host
}
