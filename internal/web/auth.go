package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// role is what a principal may do; a higher role includes the lower ones.
type role int

const (
	roleNone     role = iota
	roleViewer        // reads everything
	roleOperator      // also enqueues, cancels, retries, pauses and resizes
)

func (r role) String() string {
	switch r {
	case roleViewer:
		return "viewer"
	case roleOperator:
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
	Role  role
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

// authState holds the role secrets (as digests) and this process's random key.
type authState struct {
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

func newAuthState(d Deps) (*authState, error) {
	if d.OperatorToken == "" && d.ViewerToken != "" {
		return nil, fmt.Errorf("web: a viewer token without an operator token leaves nobody able to operate: set the operator token too")
	}
	key := make([]byte, 64)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("web: making the session key: %w", err)
	}
	a := &authState{local: d.OperatorToken == "", operator: sha256.Sum256([]byte(d.OperatorToken)),
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
func (a *authState) match(secret string) role {
	if a.local || secret == "" {
		return roleNone
	}
	d := sha256.Sum256([]byte(secret))
	op := subtle.ConstantTimeCompare(d[:], a.operator[:])
	vi := subtle.ConstantTimeCompare(d[:], a.viewer[:])
	switch {
	case op == 1:
		return roleOperator
	case vi == 1 && a.hasViewer:
		return roleViewer
	}
	return roleNone
}

// bearer resolves "Bearer <token>" or "Bearer <name>:<token>".
func (a *authState) bearer(header string) (principal, bool) {
	scheme, value, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return principal{}, false
	}
	value = strings.TrimSpace(value)
	if r := a.match(value); r != roleNone {
		return principal{Role: r, Via: viaBearer}, true
	}
	if name, secret, ok := strings.Cut(value, ":"); ok && namePattern.MatchString(name) {
		if r := a.match(secret); r != roleNone {
			return principal{Role: r, Name: name, Via: viaBearer}, true
		}
	}
	return principal{}, false
}

// authenticate finds who makes the request and stores it in the context; it
// refuses nothing (requireRole does), so public routes pass through. It is
// installed on every route and may be applied again: it runs once.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Get(ctxAuthDone) != nil {
			return next(c)
		}
		c.Set(ctxAuthDone, true)
		a, r := s.auth, c.Request()
		switch {
		case a.local:
			c.Set(ctxPrincipal, principal{Role: roleOperator, Via: viaLocal})
		case r.Header.Get("Authorization") != "":
			if p, ok := a.bearer(r.Header.Get("Authorization")); ok {
				c.Set(ctxPrincipal, p)
			} else {
				c.Set(ctxAuthError, "invalid credentials: the bearer token matches no role")
				s.log.Warn("refused a bearer token", "remote", c.RealIP(), "path", r.URL.Path)
			}
		default:
			if p, ok := s.readSession(c); ok {
				c.Set(ctxPrincipal, p)
			}
		}
		if r.Method == http.MethodGet && wantsHTML(c) {
			s.csrfBinding(c) // pages get their CSRF cookie before any body is written
		}
		return next(c)
	}
}

// principalOf returns the request's authenticated principal.
func principalOf(c echo.Context) (principal, bool) {
	p, ok := c.Get(ctxPrincipal).(principal)
	return p, ok
}

// actor is the name to record for a mutation made by this request
// (principal.actor); "" when nobody is authenticated.
func (s *Server) actor(c echo.Context) string {
	p, _ := principalOf(c)
	if p.Role == roleNone {
		return ""
	}
	return p.actor()
}

// can reports whether the request's principal has at least role r (pages use
// it to show or hide operator buttons).
func (s *Server) can(c echo.Context, r role) bool {
	p, _ := principalOf(c)
	return p.Role >= r
}

// requireRole refuses requests whose principal lacks role r: 401 without (valid)
// credentials (pages are redirected to /login instead), 403 with a lower role.
func (s *Server) requireRole(r role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return s.authenticate(func(c echo.Context) error {
			p, ok := principalOf(c)
			if !ok {
				if wantsHTML(c) && c.Request().Method == http.MethodGet {
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

// wantsHTML reports whether the request is a browser page load rather than an
// API call: not under /api/ or /metrics, and accepting text/html.
func wantsHTML(c echo.Context) bool {
	p := c.Request().URL.Path
	if strings.HasPrefix(p, "/api/") || p == "/api" || p == "/metrics" {
		return false
	}
	return strings.Contains(c.Request().Header.Get("Accept"), "text/html")
}
