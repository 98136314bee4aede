// Package request reads what the API and the pages share from a request: path
// parameters, and whether the request is for the API or a page.
package request

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"readpast/internal/queue"
)

// TaskID parses the :id path parameter.
func TaskID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id < 1 {
		return 0, &queue.ValidationError{Field: "id", Reason: fmt.Sprintf("%q is not a task id", c.Param("id"))}
	}
	return id, nil
}

// ScheduleName reads the :name path parameter of a schedule.
func ScheduleName(c echo.Context) (string, error) {
	name := PathParam(c, "name")
	return name, queue.CheckScheduleName("name", name)
}

// PathParam returns a path parameter, unescaped (names may hold '/' as %2F).
func PathParam(c echo.Context, name string) string {
	v := c.Param(name)
	if c.Request().URL.RawPath != "" {
		if u, err := url.PathUnescape(v); err == nil {
			return u
		}
	}
	return v
}

// IsAPI reports whether the request is for the JSON API.
func IsAPI(r *http.Request) bool {
	return r.URL.Path == "/api" || strings.HasPrefix(r.URL.Path, "/api/")
}

// IsPage reports whether the request is for the dashboard's pages and forms,
// which answer HTML, errors included, whatever the client accepts: everything
// but the API, /metrics, the probes and the websocket.
func IsPage(r *http.Request) bool {
	switch r.URL.Path {
	case "/metrics", "/healthz", "/readyz", "/ws":
		return false
	}
	return !IsAPI(r)
}

// WantsHTML reports whether the request is a browser's page load: a page
// (IsPage) asked for as text/html.
func WantsHTML(r *http.Request) bool {
	return IsPage(r) && strings.Contains(r.Header.Get("Accept"), "text/html")
}
