package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/web/auth"
	"readpast/internal/web/request"
)

// FanOutAnswer answers a fan-out (POST /api/tasks with targets): the group
// that makes it one unit, and each target's task.
type FanOutAnswer struct {
	FanOut string         `json:"fanout"` // its group; GET /api/fanouts/{fanout}
	IDs    []int64        `json:"ids"`    // in targets order
	Tasks  []FanOutTarget `json:"tasks"`
}

// FanOutTarget is one target's task of a fan-out.
type FanOutTarget struct {
	Target string `json:"target"`
	ID     int64  `json:"id"`
}

// createFanOut is POST /api/tasks with "targets": the body once per target.
func (h *Handler) createFanOut(c echo.Context, in taskIn) error {
	if in.Targets == nil {
		return &queue.ValidationError{Field: "fanout_limit", Reason: "is set without targets: it limits a fan-out; give targets too"}
	}
	limit := 0
	if in.FanOutLimit != nil {
		if *in.FanOutLimit < 1 {
			return &queue.ValidationError{Field: "fanout_limit", Reason: "is below 1: give how many servers may run it at once, or leave it out for all"}
		}
		limit = *in.FanOutLimit
	}
	targets := in.Targets
	in.Targets, in.FanOutLimit = nil, nil
	tmpl, err := in.newTask("", h.d.MaxBodyBytes)
	if err != nil {
		return err
	}
	f, err := h.d.Ops.EnqueueFanOut(c.Request().Context(), auth.Actor(c), tmpl, targets, limit)
	if err != nil {
		return err
	}
	out := FanOutAnswer{FanOut: f.Group, IDs: queue.IDs(f.Tasks), Tasks: make([]FanOutTarget, len(f.Targets))}
	for i, n := range f.Targets {
		out.Tasks[i] = FanOutTarget{Target: n, ID: f.Tasks[i].ID}
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/fanouts/"+f.Group)
	return WriteJSON(c, http.StatusCreated, out)
}

// whyTarget is why a pending task waits for its target ("" when it does
// not): no live node serves it.
func (h *Handler) whyTarget(ctx context.Context, t *queue.Task) string {
	if t.State != queue.StatePending {
		return ""
	}
	known, err := h.d.Ops.Targets(ctx)
	if err != nil {
		return ""
	}
	def := ""
	if t.Target == "" {
		if qs, err := h.d.Store.QueueSettings(ctx); err == nil {
			for _, q := range qs {
				if q.Name == t.Queue {
					def = q.DefaultTarget
				}
			}
		}
	}
	return ops.WhyTarget(t, def, known)
}

// TargetNode is one live node's latest check of a target.
type TargetNode struct {
	Node      string     `json:"node"`
	Reachable bool       `json:"reachable"`
	CheckedAt *time.Time `json:"checked_at"`
	LatencyMS float64    `json:"latency_ms"`
	Version   *string    `json:"version"`
	Error     *string    `json:"error"`
}

// Target is a target as GET /api/targets lists it: never its DSN.
type Target struct {
	Name    string       `json:"name"`
	Dialect string       `json:"dialect"`
	Tags    []string     `json:"tags"`
	Served  bool         `json:"served"` // a live node serves it
	Nodes   []TargetNode `json:"nodes"`
}

// listTargets is GET /api/targets: every target a node publishes.
func (h *Handler) listTargets(c echo.Context) error {
	if _, err := queryParams(c); err != nil {
		return err
	}
	known, err := h.d.Ops.Targets(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]Target, len(known))
	for i, k := range known {
		t := Target{Name: k.Name, Dialect: k.Dialect, Tags: k.Tags, Served: k.Served(), Nodes: []TargetNode{}}
		if t.Tags == nil {
			t.Tags = []string{}
		}
		for _, n := range k.Nodes {
			t.Nodes = append(t.Nodes, TargetNode{Node: n.Node, Reachable: n.Status.Reachable, CheckedAt: optTime(n.Status.Checked),
				LatencyMS: n.Status.LatencyMS, Version: orNull(n.Status.Version), Error: orNull(n.Status.Error)})
		}
		out[i] = t
	}
	return WriteJSON(c, http.StatusOK, map[string]any{"targets": out})
}

// FanOutRow is one target's task of a fan-out as its page lists it.
type FanOutRow struct {
	Target          *string    `json:"target"`
	ID              int64      `json:"id"`
	State           string     `json:"state"`
	Attempts        int        `json:"attempts"`
	StartedAt       *time.Time `json:"started_at"`
	FinishedAt      *time.Time `json:"finished_at"`
	DurationSeconds *float64   `json:"duration_seconds"`
	LastError       *string    `json:"last_error"`
}

// FanOutPage is GET /api/fanouts/{group}.
type FanOutPage struct {
	FanOut string           `json:"fanout"`
	Counts map[string]int64 `json:"counts"` // tasks per state
	Total  int              `json:"total"`
	Tasks  []FanOutRow      `json:"tasks"`
}

// getFanOut is GET /api/fanouts/{group}: every target's task, by target.
func (h *Handler) getFanOut(c echo.Context) error {
	group := request.PathParam(c, "group")
	if !ops.IsFanOut(group) {
		return &queue.ValidationError{Field: "fanout", Reason: strconv.Quote(group) + " is not a fan-out's name (they start with " + ops.FanOutPrefix + ")"}
	}
	tasks, err := h.d.Ops.FanOutTasks(c.Request().Context(), group)
	if err != nil {
		return err
	}
	if len(tasks) == 0 {
		return fmt.Errorf("fan-out %s: %w", group, queue.ErrNotFound)
	}
	out := FanOutPage{FanOut: group, Counts: map[string]int64{}, Total: len(tasks), Tasks: make([]FanOutRow, len(tasks))}
	for _, st := range queue.States {
		out.Counts[string(st)] = 0
	}
	for i, t := range tasks {
		out.Counts[string(t.State)]++
		r := FanOutRow{Target: orNull(t.Target), ID: t.ID, State: string(t.State), Attempts: t.Attempts,
			StartedAt: optTime(t.StartedAt), FinishedAt: optTime(t.FinishedAt), LastError: orNull(t.LastError)}
		if !t.StartedAt.IsZero() && !t.FinishedAt.IsZero() {
			d := t.FinishedAt.Sub(t.StartedAt).Seconds()
			r.DurationSeconds = &d
		}
		out.Tasks[i] = r
	}
	return WriteJSON(c, http.StatusOK, out)
}

// retryFanOut is POST /api/fanouts/{group}/retry: every failed or cancelled
// task of the fan-out runs again.
func (h *Handler) retryFanOut(c echo.Context) error {
	n, err := h.d.Ops.RetryFailed(c.Request().Context(), auth.Actor(c), request.PathParam(c, "group"))
	if err != nil {
		return err
	}
	return WriteJSON(c, http.StatusOK, map[string]any{"retried": n})
}
