package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/web/auth"
	"readpast/internal/web/request"
)

// Group is a concurrency group as the API returns it.
type Group struct {
	Name       string     `json:"name"`
	MaxRunning int        `json:"max_running"`
	Running    int        `json:"running"`
	Pending    int64      `json:"pending"` // tasks of the group waiting to run
	UpdatedAt  *time.Time `json:"updated_at"`
	UpdatedBy  *string    `json:"updated_by"`
}

// listGroups is GET /api/groups.
func (h *Handler) listGroups(c echo.Context) error {
	if _, err := queryParams(c); err != nil {
		return err
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	gs, err := h.d.Store.Groups(ctx)
	if err != nil {
		return err
	}
	out := make([]Group, len(gs))
	for i, g := range gs {
		out[i] = toGroup(g)
	}
	return WriteJSON(c, http.StatusOK, map[string]any{"groups": out})
}

// groupPut is PUT /api/groups/{name}.
type groupPut struct {
	MaxRunning *int `json:"max_running"`
}

// setGroup is PUT /api/groups/{name}: how many of the group's tasks may run at once.
func (h *Handler) setGroup(c echo.Context) error {
	var in groupPut
	if err := h.decodeJSON(c, &in); err != nil {
		return err
	}
	if in.MaxRunning == nil {
		return &queue.ValidationError{Field: "max_running", Reason: "is missing: give how many tasks of the group may run at once"}
	}
	g, err := h.d.Ops.SetGroupLimit(c.Request().Context(), auth.Actor(c), request.PathParam(c, "name"), *in.MaxRunning)
	if err != nil {
		return err
	}
	return WriteJSON(c, http.StatusOK, toGroup(*g))
}

func toGroup(g queue.Group) Group {
	return Group{Name: g.Name, MaxRunning: g.MaxRunning, Running: g.Running, Pending: g.Pending, UpdatedAt: optTime(g.UpdatedAt), UpdatedBy: orNull(g.UpdatedBy)}
}
