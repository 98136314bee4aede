package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"readpast/internal/testenv"
	"regexp"
	"strings"
	"testing"

	"readpast/internal/web/api"
	"readpast/internal/web/auth"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
)

// csrfFor is the CSRF token the server would put in a page for a browser that
// holds these cookies (what the pages render with s.csrfToken).
func (e *apiEnv) csrfFor(cookies []*http.Cookie) string {
	e.t.Helper()
	req := httptest.NewRequest("GET", "/", nil)
	req.Host = "127.0.0.1"
	for _, ck := range cookies {
		req.AddCookie(ck)
	}
	c := e.server.echo.NewContext(req, httptest.NewRecorder())
	var tok string
	require.NoError(e.t, e.server.guard.Authenticate(func(c echo.Context) error { tok = e.server.guard.CSRFToken(c); return nil })(c))
	return tok
}

var hiddenCSRF = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// signIn loads the login page, then posts the token; it returns the answer.
func (e *apiEnv) signIn(jar http.CookieJar, token, name, next string) apiRes {
	e.t.Helper()
	page := e.send(e.newRequest("GET", "/login?next="+url.QueryEscape(next), "", ""), jar)
	require.Equal(e.t, http.StatusOK, page.status, "%s", page.body)
	m := hiddenCSRF.FindStringSubmatch(string(page.body))
	require.NotNil(e.t, m, "the login form must carry a CSRF token: %s", page.body)
	form := url.Values{"csrf_token": {m[1]}, "token": {token}, "name": {name}, "next": {next}}
	req := e.newRequest("POST", "/login", "", "")
	req.Body, req.ContentLength = nopBody(form.Encode()), int64(len(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return e.send(req, jar)
}

// A browser signs in with a token and gets a session cookie; its mutations
// need the CSRF token; signing out revokes the session.
func TestBrowserSessionAndCSRF(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d, tokens: true})
		base, _ := url.Parse(e.srv.URL)

		// The login form refuses a post without its CSRF token, and a wrong token.
		jar := newJar(t)
		req := e.newRequest("POST", "/login", "", "")
		req.Body = nopBody("token=" + testOperatorToken)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r := e.send(req, jar)
		require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
		require.Contains(t, string(r.body), "missing or invalid CSRF token", "a page's refusal is the HTML error page")
		r = e.signIn(jar, "wrong-token-wrong-token", "", "/")
		require.Equal(t, http.StatusUnauthorized, r.status)
		require.Contains(t, string(r.body), "matches no role")

		// Signed in: HttpOnly, SameSite=Strict, and next is followed.
		r = e.signIn(jar, testOperatorToken, "carol", "/tasks?state=failed")
		require.Equal(t, http.StatusSeeOther, r.status, "%s", r.body)
		require.Equal(t, "/tasks?state=failed", r.header.Get("Location"))
		setCookie := strings.Join(r.header.Values("Set-Cookie"), "\n")
		require.Contains(t, setCookie, auth.SessionCookie+"=")
		require.Contains(t, setCookie, "HttpOnly")
		require.Contains(t, setCookie, "SameSite=Strict")

		// The session reads; its mutations need the CSRF token bound to it.
		r = e.send(e.newRequest("GET", "/api/tasks", "", ""), jar)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r = e.send(e.newRequest("POST", "/api/tasks", "", `{"body":"SELECT 1"}`), jar)
		require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
		require.Contains(t, r.errorMsg(t), "CSRF")
		tok := e.csrfFor(jar.Cookies(base))
		req = e.newRequest("POST", "/api/tasks", "", `{"body":"SELECT 1"}`)
		req.Header.Set(auth.CSRFHeader, tok)
		r = e.send(req, jar)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		var created api.Task
		r.json(t, &created)
		require.Equal(t, "operator:carol", *created.CreatedBy)

		// Even with the token, a cross-site request is refused.
		req = e.newRequest("POST", "/api/tasks", "", `{"body":"SELECT 1"}`)
		req.Header.Set(auth.CSRFHeader, tok)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		r = e.send(req, jar)
		require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
		require.Contains(t, r.errorMsg(t), "cross-origin")

		// A tampered cookie is nobody.
		var session *http.Cookie
		for _, ck := range jar.Cookies(base) {
			if ck.Name == auth.SessionCookie {
				session = ck
			}
		}
		require.NotNil(t, session)
		forged := *session
		forged.Value = strings.Replace(forged.Value, ".", "x.", 1)
		req = e.newRequest("GET", "/api/tasks", "", "")
		req.AddCookie(&forged)
		require.Equal(t, http.StatusUnauthorized, e.send(req, nil).status)

		// Sign out: a form post with the token; the old cookie no longer works.
		form := url.Values{auth.CSRFField: {tok}}.Encode()
		req = e.newRequest("POST", "/logout", "", "")
		req.Body = nopBody(form)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r = e.send(req, jar)
		require.Equal(t, http.StatusSeeOther, r.status, "%s", r.body)
		req = e.newRequest("GET", "/api/tasks", "", "")
		req.AddCookie(session)
		require.Equal(t, http.StatusUnauthorized, e.send(req, nil).status, "a signed-out session is revoked")

		// A viewer session reads but cannot change anything.
		vjar := newJar(t)
		require.Equal(t, http.StatusSeeOther, e.signIn(vjar, testViewerToken, "", "/").status)
		req = e.newRequest("POST", "/api/tasks", "", `{"body":"SELECT 1"}`)
		req.Header.Set(auth.CSRFHeader, e.csrfFor(vjar.Cookies(base)))
		r = e.send(req, vjar)
		require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
		require.Contains(t, r.errorMsg(t), "viewer role")
	})
}

// Pages without a session go to the login page; login never redirects off-site
// and escapes what it echoes.
func TestLoginRedirectsAndEscapes(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d, tokens: true})
		e.server.echo.GET("/sec-test-page", func(c echo.Context) error { return c.String(200, "page") }, e.server.guard.RequireRole(auth.Viewer))
		req := e.newRequest("GET", "/sec-test-page?x=1", "", "")
		req.Header.Set("Accept", "text/html")
		r := e.send(req, nil)
		require.Equal(t, http.StatusSeeOther, r.status)
		require.Equal(t, "/login?next="+url.QueryEscape("/sec-test-page?x=1"), r.header.Get("Location"))

		for _, next := range []string{"//evil.example/x", "https://evil.example/", `/\evil.example`, "javascript:alert(1)"} {
			r := e.signIn(newJar(t), testOperatorToken, "", next)
			require.Equal(t, http.StatusSeeOther, r.status)
			require.Equal(t, "/", r.header.Get("Location"), "next=%s must not leave the site", next)
		}

		r = e.send(e.newRequest("GET", "/login?next="+url.QueryEscape(`/x"><script>alert(1)</script>`), "", ""), nil)
		require.Equal(t, http.StatusOK, r.status)
		require.NotContains(t, string(r.body), "<script>")
		require.Contains(t, string(r.body), "&lt;script&gt;")
	})
}

// Local mode: no credentials, every request is the operator "local", but a
// page elsewhere can neither drive nor read the dashboard.
func TestLocalMode(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d})
		created := e.enqueue("", `{"body":"SELECT 1"}`)
		require.Equal(t, "local", *created.CreatedBy)
		require.Equal(t, http.StatusOK, e.call("GET", "/metrics", "", "").status)

		// DNS rebinding: a foreign Host is refused, reads included.
		req := e.newRequest("GET", "/api/tasks", "", "")
		req.Host = "evil.example:8080"
		r := e.send(req, nil)
		require.Equal(t, http.StatusForbidden, r.status)
		require.Contains(t, r.errorMsg(t), "DNS rebinding")
		for _, host := range []string{"localhost:8080", "[::1]:8080", "127.0.0.1"} {
			req := e.newRequest("GET", "/api/tasks", "", "")
			req.Host = host
			require.Equal(t, http.StatusOK, e.send(req, nil).status, host)
		}

		// Cross-site requests are refused, by Fetch metadata or by Origin.
		for h, v := range map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"} {
			req := e.newRequest("POST", "/api/tasks", "", `{"body":"SELECT 1"}`)
			req.Header.Set(h, v)
			r := e.send(req, nil)
			require.Equal(t, http.StatusForbidden, r.status, "%s: %s", h, r.body)
		}
		req = e.newRequest("POST", "/api/tasks", "", `{"body":"SELECT 1"}`)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		require.Equal(t, http.StatusCreated, e.send(req, nil).status, "the dashboard's own page may post")

		// Forms need the double-submit CSRF token even in local mode.
		form := func(token string, cookie *http.Cookie) int {
			req := e.newRequest("POST", "/logout", "", "")
			req.Body = nopBody(url.Values{auth.CSRFField: {token}}.Encode())
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if cookie != nil {
				req.AddCookie(cookie)
			}
			return e.send(req, nil).status
		}
		ck := &http.Cookie{Name: auth.CSRFCookie, Value: "a-browser-cookie-value-123"}
		require.Equal(t, http.StatusForbidden, form("", ck))
		require.Equal(t, http.StatusForbidden, form("forged", ck))
		other := &http.Cookie{Name: auth.CSRFCookie, Value: "an-attacker-planted-value-456"}
		require.Equal(t, http.StatusForbidden, form(e.csrfFor([]*http.Cookie{ck}), other), "a token is bound to its cookie")
		require.Equal(t, http.StatusSeeOther, form(e.csrfFor([]*http.Cookie{ck}), ck))
	})
}

// Every answer carries the security headers: pages, API, errors, probes.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, d testenv.Dialect) {
		e := newAPIEnv(t, apiOpts{dialect: d, tokens: true})
		for _, path := range []string{"/healthz", "/login", "/api/tasks", "/no-such-page", "/metrics"} {
			r := e.call("GET", path, "", "")
			h := r.header
			require.Equal(t, auth.ContentSecurityPolicy, h.Get("Content-Security-Policy"), path)
			require.Contains(t, h.Get("Content-Security-Policy"), "frame-ancestors 'none'")
			require.NotContains(t, h.Get("Content-Security-Policy"), "unsafe-inline")
			require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"), path)
			require.Equal(t, "same-origin", h.Get("Referrer-Policy"), path)
			require.Equal(t, "DENY", h.Get("X-Frame-Options"), path)
		}
		require.Equal(t, "no-store", e.call("GET", "/api/tasks", testViewerToken, "").header.Get("Cache-Control"))
	})
}
