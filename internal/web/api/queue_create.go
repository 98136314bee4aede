package api

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"readpast/internal/queue"
	"readpast/internal/web/auth"
)

// queuePost is POST /api/queues: a new queue and its settings.
type queuePost struct {
	Name       *string `json:"name"`
	Workers    *int    `json:"workers"`
	MaxRunning *int    `json:"max_running"`
	Paused     bool    `json:"paused"`
	// DefaultTarget: where its tasks that name no target run (absent or
	// null: the node's default target).
	DefaultTarget *string `json:"default_target"`
	ResultRows    *int    `json:"result_rows"` // absent: 0, no result output kept
}

// createQueue is POST /api/queues (operator): makes a queue before any task
// is enqueued on it, with its settings. A taken name is 409: PATCH changes a
// queue, and never makes one.
func (h *Handler) createQueue(c echo.Context) error {
	var in queuePost
	if err := h.decodeJSON(c, &in); err != nil {
		return err
	}
	if in.Name == nil {
		return &queue.ValidationError{Field: "name", Reason: "is missing: give the new queue's name"}
	}
	paused := in.Paused
	q, err := h.d.Ops.CreateQueue(c.Request().Context(), auth.Actor(c), *in.Name,
		queue.QueueUpdate{Workers: in.Workers, MaxRunning: in.MaxRunning, Paused: &paused, DefaultTarget: in.DefaultTarget,
			ResultRows: in.ResultRows})
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/queues/"+url.PathEscape(q.Name))
	return WriteJSON(c, http.StatusCreated, toQueue(*q))
}
