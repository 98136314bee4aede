package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
	"readpast/internal/web/auth"
	"readpast/internal/web/request"
)

// cancelTask is POST /api/tasks/{id}/cancel (ops.Cancel). It answers with the
// task as it is afterwards: a running one may still be running, with
// cancel_requested, until its statement stops.
func (h *Handler) cancelTask(c echo.Context) error {
	id, err := request.TaskID(c)
	if err != nil {
		return err
	}
	if _, err := h.d.Ops.Cancel(c.Request().Context(), auth.Actor(c), id); err != nil {
		return err
	}
	return h.answerTask(c, http.StatusOK, id)
}

// retryTask is POST /api/tasks/{id}/retry (ops.Retry): a failed or cancelled
// task runs again now with a fresh attempt budget.
func (h *Handler) retryTask(c echo.Context) error {
	id, err := request.TaskID(c)
	if err != nil {
		return err
	}
	t, err := h.d.Ops.Retry(c.Request().Context(), auth.Actor(c), id)
	if err != nil {
		return err
	}
	return WriteJSON(c, http.StatusOK, toTask(t))
}

// requeueTask is POST /api/tasks/{id}/requeue (ops.Requeue): a finished
// task, succeeded too, enqueued again as a new task; answered like POST
// /api/tasks (201 with the new task, 200 with the unfinished task that has
// its unique key).
func (h *Handler) requeueTask(c echo.Context) error {
	id, err := request.TaskID(c)
	if err != nil {
		return err
	}
	res, err := h.d.Ops.Requeue(c.Request().Context(), auth.Actor(c), id)
	if err != nil {
		return err
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	t, err := h.d.Store.Get(ctx, res.ID)
	if err != nil {
		return err
	}
	return answerEnqueued(c, t, res.Duplicate)
}

// deleteTask is DELETE /api/tasks/{id} (ops.DeleteTask): a finished task
// and its log rows; 204.
func (h *Handler) deleteTask(c echo.Context) error {
	id, err := request.TaskID(c)
	if err != nil {
		return err
	}
	if err := h.d.Ops.DeleteTask(c.Request().Context(), auth.Actor(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
