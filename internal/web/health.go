package web

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/queue"
	"readpast/migrations"
)

// registerHealth adds the load balancer's probes; they need no credentials.
func registerHealth(e *echo.Echo, store queue.Store) {
	h := &health{store: store}
	e.GET("/healthz", h.live)
	e.GET("/readyz", h.ready)
}

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
		err = migrations.CheckStatus(st)
	}
	if err != nil {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "store unavailable", "error": err.Error()})
	}
	if st.Version < st.Latest {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "schema behind: run readpast migrate up"})
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}
