package web

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/queue"
)

// groupOut is a concurrency group as the API returns it.
type groupOut struct {
	Name       string    `json:"name"`
	MaxRunning int       `json:"max_running"`
	Running    int       `json:"running"`
	UpdatedAt  time.Time `json:"updated_at"`
	UpdatedBy  string    `json:"updated_by"`
}

// listGroups is GET /api/groups.
func (s *Server) listGroups(c echo.Context) error {
	if _, err := queryParams(c); err != nil {
		return err
	}
	gs, err := s.d.Store.Groups(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]groupOut, len(gs))
	for i, g := range gs {
		out[i] = groupOut{Name: g.Name, MaxRunning: g.MaxRunning, Running: g.Running, UpdatedAt: g.UpdatedAt.UTC(), UpdatedBy: g.UpdatedBy}
	}
	return writeJSON(c, http.StatusOK, map[string]any{"groups": out})
}

// groupPut is PUT /api/groups/{name}.
type groupPut struct {
	MaxRunning *int `json:"max_running"`
}

// setGroup is PUT /api/groups/{name}: how many of the group's tasks may run at once.
func (s *Server) setGroup(c echo.Context) error {
	var in groupPut
	if err := s.decodeJSON(c, &in); err != nil {
		return err
	}
	if in.MaxRunning == nil {
		return &queue.ValidationError{Field: "max_running", Reason: "is missing: give how many tasks of the group may run at once"}
	}
	name := pathParam(c, "name")
	if err := queue.CheckGroupLimit(name, *in.MaxRunning); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.d.Store.SetGroupLimit(ctx, name, *in.MaxRunning, s.actor(c)); err != nil {
		return err
	}
	gs, err := s.d.Store.Groups(ctx)
	if err != nil {
		return err
	}
	for _, g := range gs {
		if g.Name == name {
			return writeJSON(c, http.StatusOK, groupOut{Name: g.Name, MaxRunning: g.MaxRunning, Running: g.Running, UpdatedAt: g.UpdatedAt.UTC(), UpdatedBy: g.UpdatedBy})
		}
	}
	return fmt.Errorf("group %s: %w after setting its limit", name, queue.ErrNotFound)
}
