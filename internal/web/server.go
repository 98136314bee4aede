// Package web serves the dashboard and the JSON API over echo (SPEC §7).
package web

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/queue"
)

// Deps is what the web layer uses; handlers declare narrower interfaces.
type Deps struct {
	Store  queue.Store
	Logger *slog.Logger
}

// New returns the HTTP handler of the dashboard and API.
func New(d Deps) http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	h := &health{store: d.Store}
	e.GET("/healthz", h.live)
	e.GET("/readyz", h.ready)
	return e
}

// health answers the load balancer's two questions.
type health struct{ store queue.Store }

// live: the process serves requests.
func (h *health) live(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// ready: the store answers and its schema is current.
func (h *health) ready(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	st, err := h.store.SchemaVersion(ctx)
	if err == nil {
		err = queue.CheckStatus(st)
	}
	if err == nil && st.Version < st.Latest {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "schema behind: run readpast migrate up"})
	}
	if err != nil {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "store unavailable", "error": err.Error()})
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}
