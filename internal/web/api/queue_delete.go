package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"readpast/internal/web/auth"
	"readpast/internal/web/request"
)

// deleteQueue is DELETE /api/queues/{name} (operator): removes a queue that
// holds no task; 409 with what to do while it holds some, 404 for none.
func (h *Handler) deleteQueue(c echo.Context) error {
	if err := h.d.Ops.DeleteQueue(c.Request().Context(), auth.Actor(c), request.PathParam(c, "name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
