package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// sessionCookie holds a browser's login: role, name, expiry and a random id,
// HMAC-signed with this process's key (so a restart signs everyone out).
const SessionCookie = "readpast_session"

type sessionData struct {
	Role    string `json:"r"`
	Name    string `json:"n,omitempty"`
	Expires int64  `json:"e"` // Unix seconds
	Nonce   string `json:"s"`
}

var b64 = base64.RawURLEncoding

func (a *Guard) sign(payload string) string {
	m := hmac.New(sha256.New, a.sessionKey)
	m.Write([]byte(payload))
	return b64.EncodeToString(m.Sum(nil))
}

// encodeSession returns the cookie value: base64(JSON) "." base64(HMAC).
func (a *Guard) encodeSession(d sessionData) string {
	j, _ := json.Marshal(d)
	p := b64.EncodeToString(j)
	return p + "." + a.sign(p)
}

// decodeSession checks the signature, expiry and revocation of a cookie value.
func (a *Guard) decodeSession(v string, now time.Time) (principal, bool) {
	p, sig, ok := strings.Cut(v, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(a.sign(p))) {
		return principal{}, false
	}
	j, err := b64.DecodeString(p)
	if err != nil {
		return principal{}, false
	}
	var d sessionData
	if json.Unmarshal(j, &d) != nil || now.Unix() >= d.Expires || d.Nonce == "" {
		return principal{}, false
	}
	var r Role
	switch d.Role {
	case "operator":
		r = Operator
	case "viewer":
		r = Viewer
	default:
		return principal{}, false
	}
	if a.isRevoked(d.Nonce, now) {
		return principal{}, false
	}
	return principal{Role: r, Name: d.Name, Via: viaSession, nonce: d.Nonce}, true
}

func (a *Guard) revoke(nonce string, until time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	for n, exp := range a.revoked {
		if now.After(exp) {
			delete(a.revoked, n)
		}
	}
	a.revoked[nonce] = until
}

func (a *Guard) isRevoked(nonce string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.revoked[nonce]
	return ok && now.Before(exp)
}

// readSession returns the principal of a valid session cookie.
func (a *Guard) readSession(c echo.Context) (principal, bool) {
	ck, err := c.Cookie(SessionCookie)
	if err != nil || ck.Value == "" {
		return principal{}, false
	}
	return a.decodeSession(ck.Value, time.Now())
}

// startSession signs the principal in with a fresh session cookie.
func (a *Guard) startSession(c echo.Context, r Role, name string) {
	exp := time.Now().Add(a.ttl)
	v := a.encodeSession(sessionData{Role: r.String(), Name: name, Expires: exp.Unix(), Nonce: randomToken()})
	c.SetCookie(Cookie(c, SessionCookie, v, exp))
}

// endSession revokes the session (until it would have expired) and clears the cookie.
func (a *Guard) endSession(c echo.Context) {
	if p, ok := a.readSession(c); ok {
		a.revoke(p.nonce, time.Now().Add(a.ttl))
	}
	ck := Cookie(c, SessionCookie, "", time.Unix(0, 0))
	ck.MaxAge = -1
	c.SetCookie(ck)
}

// Cookie is every ReadPast cookie: HttpOnly, SameSite=Strict, path /, Secure
// when the request came over HTTPS (directly or through a proxy that says so).
func Cookie(c echo.Context, name, value string, expires time.Time) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/", Expires: expires, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.Scheme() == "https"}
}

// randomToken is 128 random bits, URL-safe.
func randomToken() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic("web: crypto/rand failed: " + err.Error())
	}
	return b64.EncodeToString(b)
}
