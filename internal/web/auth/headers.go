package auth

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

// ContentSecurityPolicy allows only this origin's scripts, styles and
// connections (no inline script), no framing, and forms posting here only.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// SecurityHeaders sets the headers every response carries, errors included.
func SecurityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		return next(c)
	}
}

// NoStore keeps API answers and login pages out of caches.
func NoStore(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "no-store")
		return next(c)
	}
}

// LocalHostOnly, in local mode (no credentials), answers only requests whose
// Host is a loopback name or address. Otherwise a web page on an attacker's
// domain that re-resolves to 127.0.0.1 (DNS rebinding) would be same-origin
// with the dashboard and could read and drive it.
func (a *Guard) LocalHostOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if a.local && !loopbackHost(c.Request().Host) {
			return echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf(
				"forbidden: in local mode (no tokens) ReadPast answers only to localhost, 127.0.0.1 or [::1], not Host %q (DNS rebinding protection)",
				c.Request().Host))
		}
		return next(c)
	}
}

// loopbackHost reports whether a Host header names this machine's loopback.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// parseOrigin returns the host:port of an http(s) Origin header.
func parseOrigin(o string) (string, error) {
	u, err := url.Parse(o)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("origin %q is not http(s)", o)
	}
	return u.Host, nil
}
