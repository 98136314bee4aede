package auth

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"readpast/web/static"
	"readpast/web/templates"
)

// loginPage is GET /login. In local mode there is nothing to sign in to.
func (a *Guard) loginPage(c echo.Context) error {
	next := safeNext(c.QueryParam("next"))
	if a.local {
		return c.Redirect(http.StatusSeeOther, next)
	}
	if _, ok := a.readSession(c); ok {
		return c.Redirect(http.StatusSeeOther, next)
	}
	return a.renderLogin(c, http.StatusOK, templates.LoginView{Next: next})
}

// login is POST /login (its CSRF token was checked by checkCSRF): a valid
// token starts a session and goes on to next.
func (a *Guard) login(c echo.Context) error {
	next := safeNext(c.FormValue("next"))
	if a.local {
		return c.Redirect(http.StatusSeeOther, next)
	}
	name := strings.TrimSpace(c.FormValue("name"))
	view := templates.LoginView{Next: next, Name: name}
	if name != "" && !namePattern.MatchString(name) {
		view.Error = "A name is 1 to 64 letters, digits or _ . @ -"
		return a.renderLogin(c, http.StatusBadRequest, view)
	}
	r := a.match(c.FormValue("token"))
	if r == None {
		a.log.Warn("refused a sign-in", "remote", c.RealIP())
		view.Error = "That token matches no role."
		return a.renderLogin(c, http.StatusUnauthorized, view)
	}
	a.startSession(c, r, name)
	a.log.Info("signed in", "role", r, "name", name, "remote", c.RealIP())
	return c.Redirect(http.StatusSeeOther, next)
}

// logout is POST /logout: the session is revoked and its cookie cleared.
func (a *Guard) logout(c echo.Context) error {
	a.endSession(c)
	if a.local {
		return c.Redirect(http.StatusSeeOther, "/")
	}
	return c.Redirect(http.StatusSeeOther, "/login")
}

func (a *Guard) renderLogin(c echo.Context, status int, v templates.LoginView) error {
	v.CSSURL, v.CSRFField, v.CSRF, v.Viewer = static.URL("app.css"), CSRFField, a.CSRFToken(c), a.hasViewer
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	return templates.Login(v).Render(c.Request().Context(), c.Response())
}

// safeNext keeps a post-login redirect on this site: a local absolute path,
// never //host or a scheme, else "/".
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, `/\`) {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || strings.ContainsAny(next, "\r\n\t") {
		return "/"
	}
	return next
}

// Register adds the sign-in routes: GET and POST /login, POST /logout.
func (a *Guard) Register(e *echo.Echo) {
	e.GET("/login", a.loginPage, NoStore)
	e.POST("/login", a.login, NoStore)
	e.POST("/logout", a.logout)
}
