package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
	"readpast/internal/web/auth"
	"readpast/internal/web/request"
)

// Schedules (docs/SCHEDULES.md). Every change goes through the operations,
// which wake this node's scheduler; the schedule package checks a definition
// before the store writes anything, and the store audits the change as the
// caller's.

// listSchedules is GET /api/schedules: every schedule by name, each with its
// next fire times and its latest run.
func (h *Handler) listSchedules(c echo.Context) error {
	if _, err := queryParams(c); err != nil {
		return err
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	list, err := h.d.Store.Schedules(ctx)
	if err != nil {
		return err
	}
	out := make([]Schedule, len(list))
	for i := range list {
		out[i] = toSchedule(&list[i])
	}
	return WriteJSON(c, http.StatusOK, map[string]any{"schedules": out})
}

// getSchedule is GET /api/schedules/{name}.
func (h *Handler) getSchedule(c echo.Context) error {
	name, err := request.ScheduleName(c)
	if err != nil {
		return err
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	s, err := h.d.Store.GetSchedule(ctx, name)
	if err != nil {
		return err
	}
	return WriteJSON(c, http.StatusOK, toSchedule(s))
}

// createSchedule is POST /api/schedules: 201 with the schedule; 409 when the
// name is taken.
func (h *Handler) createSchedule(c echo.Context) error {
	var in scheduleIn
	if err := h.decodeJSON(c, &in); err != nil {
		return err
	}
	d, err := in.def()
	if err != nil {
		return err
	}
	s, err := h.d.Ops.CreateSchedule(c.Request().Context(), auth.Actor(c), d)
	if err != nil {
		return prefixed("", err)
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/schedules/"+s.Name)
	return WriteJSON(c, http.StatusCreated, toSchedule(s))
}

// updateSchedule is PATCH /api/schedules/{name}: a change of the definition,
// or {"paused": true|false} to pause or resume.
func (h *Handler) updateSchedule(c echo.Context) error {
	name, err := request.ScheduleName(c)
	if err != nil {
		return err
	}
	var in schedulePatch
	if err := h.decodeJSON(c, &in); err != nil {
		return err
	}
	u, err := in.update()
	if err != nil {
		return err
	}
	s, err := h.d.Ops.UpdateSchedule(c.Request().Context(), auth.Actor(c), name, u)
	if err != nil {
		return prefixed("", err)
	}
	return WriteJSON(c, http.StatusOK, toSchedule(s))
}

// deleteSchedule is DELETE /api/schedules/{name}: 204; its tasks stay.
func (h *Handler) deleteSchedule(c echo.Context) error {
	name, err := request.ScheduleName(c)
	if err != nil {
		return err
	}
	if err := h.d.Ops.DeleteSchedule(c.Request().Context(), auth.Actor(c), name); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// runSchedule is POST /api/schedules/{name}/run: a run now, answered as an
// enqueue (201 with the new task, or 200 with the unfinished latest run and
// "duplicate": true under overlap skip).
func (h *Handler) runSchedule(c echo.Context) error {
	name, err := request.ScheduleName(c)
	if err != nil {
		return err
	}
	t, duplicate, err := h.d.Ops.RunSchedule(c.Request().Context(), auth.Actor(c), name)
	if err != nil {
		return err
	}
	return answerEnqueued(c, t, duplicate)
}
