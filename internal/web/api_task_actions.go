package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"readpast/internal/logs"
	"readpast/internal/queue"
)

func toTaskDetail(t *queue.Task, recs []queue.AttemptRecord) taskDetail {
	d := taskDetail{taskOut: toTaskOut(t), Why: optString(t.Why), Log: make([]logs.Row, len(recs))}
	for i, r := range recs {
		d.Log[i] = logs.FromRecord(r)
	}
	return d
}

// cancelTask is POST /api/tasks/{id}/cancel. A pending task is cancelled at
// once; for a running one the store records the request and, when it runs on
// this node, its statement is stopped now (other nodes stop theirs at their
// next heartbeat). It answers with the task as it is afterwards.
func (s *Server) cancelTask(c echo.Context) error {
	id, err := taskID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	st, err := s.d.Store.Cancel(ctx, id, s.actor(c))
	if err != nil {
		return err
	}
	if st == queue.StateRunning && s.d.Node != nil {
		s.d.Node.CancelTask(id)
	}
	t, err := s.d.Store.Get(ctx, id)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, toTaskOut(t))
}

// retryTask is POST /api/tasks/{id}/retry: a failed or cancelled task runs
// again now with a fresh attempt budget.
func (s *Server) retryTask(c echo.Context) error {
	id, err := taskID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.d.Store.Retry(ctx, id, s.actor(c)); err != nil {
		return err
	}
	t, err := s.d.Store.Get(ctx, id)
	if err != nil {
		return err
	}
	s.wake(t.Queue)
	return writeJSON(c, http.StatusOK, toTaskOut(t))
}
