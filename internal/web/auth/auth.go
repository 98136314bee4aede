// Package auth is who may do what on the dashboard and the API
// (docs/SECURITY.md): the two roles and their tokens, browser sessions, CSRF
// protection, the local mode's loopback guard and the security headers.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/web/request"
)

// Role is what a principal may do; a higher role includes the lower ones.
type Role int

// The roles.
const (
	None     Role = iota
	Viewer        // reads everything
	Operator      // also enqueues, cancels, retries, pauses and resizes
)

func (r Role) String() string {
	switch r {
	case Viewer:
		return "viewer"
	case Operator:
		return "operator"
	}
	return "none"
}

// How a principal was authenticated.
const (
	viaLocal   = "local"   // no tokens configured: loopback-only local mode
	viaBearer  = "bearer"  // Authorization: Bearer <token>
	viaSession = "session" // the browser's signed session cookie
)

// principal is who makes a request.
type principal struct {
	Role  Role
	Name  string // optional label carried by the token or given at login
	Via   string // viaLocal, viaBearer or viaSession
	nonce string // the session's id (viaSession only): binds its CSRF token
}

// actor is the name recorded as created_by and in the audit log: "local" in
// local mode, else the role, followed by ":name" when the principal has one.
func (p principal) actor() string {
	switch {
	case p.Via == viaLocal:
		return "local"
	case p.Name != "":
		return p.Role.String() + ":" + p.Name
	}
	return p.Role.String()
}

// Keys of the values authenticate stores in the echo context.
const (
	ctxPrincipal = "readpast.principal"
	ctxAuthDone  = "readpast.auth_done"
	ctxAuthError = "readpast.auth_error" // why presented credentials were refused
	ctxCSRFBind  = "readpast.csrf_binding"
)

// namePattern is what a principal's name may be: a label, not a secret.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,64}$`)

// Config is what New needs.
type Config struct {
	// OperatorToken and ViewerToken are the role secrets. With neither set the
	// dashboard is in local mode: it only ever listens on loopback (the binary
	// refuses otherwise) and every request acts as the operator "local".
	OperatorToken string
	ViewerToken   string
	// SessionTTL is how long a browser login lasts; 0 means 12 hours.
	SessionTTL time.Duration
	// Logger receives refused credentials; nil discards them.
	Logger *slog.Logger
}

// Guard holds the role secrets (as digests) and this process's random keys,
// and provides the middleware that authenticates and checks every request.
type Guard struct {
	log        *slog.Logger
	local      bool
	operator   [32]byte
	viewer     [32]byte
	hasViewer  bool
	sessionKey []byte // signs session cookies
	csrfKey    []byte // derives CSRF tokens
	ttl        time.Duration
	cop        *http.CrossOriginProtection

	mu      sync.Mutex
	revoked map[string]time.Time // logged-out session nonces until they expire
}

// New makes the guard for the configured tokens.
func New(d Config) (*Guard, error) {
	if d.OperatorToken == "" && d.ViewerToken != "" {
		return nil, fmt.Errorf("web: a viewer token without an operator token leaves nobody able to operate: set the operator token too")
	}
	key := make([]byte, 64)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("web: making the session key: %w", err)
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	a := &Guard{log: d.Logger, local: d.OperatorToken == "", operator: sha256.Sum256([]byte(d.OperatorToken)),
		viewer: sha256.Sum256([]byte(d.ViewerToken)), hasViewer: d.ViewerToken != "",
		sessionKey: key[:32], csrfKey: key[32:], ttl: d.SessionTTL, cop: http.NewCrossOriginProtection(),
		revoked: map[string]time.Time{}}
	if a.ttl <= 0 {
		a.ttl = 12 * time.Hour
	}
	return a, nil
}

// match compares a presented secret with both role secrets in constant time
// (digests first, so neither length nor content leaks through timing).
func (a *Guard) match(secret string) Role {
	if a.local || secret == "" {
		return None
	}
	d := sha256.Sum256([]byte(secret))
	op := subtle.ConstantTimeCompare(d[:], a.operator[:])
	vi := subtle.ConstantTimeCompare(d[:], a.viewer[:])
	switch {
	case op == 1:
		return Operator
	case vi == 1 && a.hasViewer:
		return Viewer
	}
	return None
}

// bearer resolves "Bearer <token>" or "Bearer <name>:<token>".
func (a *Guard) bearer(header string) (principal, bool) {
	scheme, value, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return principal{}, false
	}
	value = strings.TrimSpace(value)
	if r := a.match(value); r != None {
		return principal{Role: r, Via: viaBearer}, true
	}
	if name, secret, ok := strings.Cut(value, ":"); ok && namePattern.MatchString(name) {
		if r := a.match(secret); r != None {
			return principal{Role: r, Name: name, Via: viaBearer}, true
		}
	}
	return principal{}, false
}

// Authenticate finds who makes the request and stores it in the context; it
// refuses nothing (requireRole does), so public routes pass through. It is
// installed on every route and may be applied again: it runs once.
func (a *Guard) Authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Get(ctxAuthDone) != nil {
			return next(c)
		}
		c.Set(ctxAuthDone, true)
		r := c.Request()
		switch {
		case a.local:
			c.Set(ctxPrincipal, principal{Role: Operator, Via: viaLocal})
		case r.Header.Get("Authorization") != "":
			if p, ok := a.bearer(r.Header.Get("Authorization")); ok {
				c.Set(ctxPrincipal, p)
			} else {
				c.Set(ctxAuthError, "invalid credentials: the bearer token matches no role")
				a.log.Warn("refused a bearer token", "remote", c.RealIP(), "path", r.URL.Path)
			}
		default:
			if p, ok := a.readSession(c); ok {
				c.Set(ctxPrincipal, p)
			}
		}
		if r.Method == http.MethodGet && request.WantsHTML(r) {
			a.csrfBinding(c) // pages get their CSRF cookie before any body is written
		}
		return next(c)
	}
}

// principalOf returns the request's authenticated principal.
func principalOf(c echo.Context) (principal, bool) {
	p, ok := c.Get(ctxPrincipal).(principal)
	return p, ok
}

// Actor is the name to record for a mutation made by this request
// (principal.actor); "" when nobody is authenticated.
func Actor(c echo.Context) string {
	p, _ := principalOf(c)
	if p.Role == None {
		return ""
	}
	return p.actor()
}

// Can reports whether the request's principal has at least role r (pages use
// it to show or hide operator buttons).
func Can(c echo.Context, r Role) bool {
	p, _ := principalOf(c)
	return p.Role >= r
}

// RequireRole refuses requests whose principal lacks role r: 401 without (valid)
// credentials (a page is redirected to /login instead), 403 with a lower role.
func (a *Guard) RequireRole(r Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return a.Authenticate(func(c echo.Context) error {
			p, ok := principalOf(c)
			if !ok {
				if request.IsPage(c.Request()) && c.Request().Method == http.MethodGet {
					return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(c.Request().URL.RequestURI()))
				}
				msg, _ := c.Get(ctxAuthError).(string)
				if msg == "" {
					msg = "missing credentials: send Authorization: Bearer <token>, or sign in at /login"
				}
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="readpast"`)
				return echo.NewHTTPError(http.StatusUnauthorized, msg)
			}
			if p.Role < r {
				return echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf("forbidden: the %s role cannot do this; it needs the %s role", p.Role, r))
			}
			return next(c)
		})
	}
}
