package api

import (
	"net/http"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/web/auth"
	"readpast/internal/web/request"
)

// Queue is a queue as the API returns it.
type Queue struct {
	Name       string           `json:"name"`
	Workers    *int             `json:"workers"`     // per node; null: the node's default
	MaxRunning *int             `json:"max_running"` // cluster-wide; null: no limit
	Paused     bool             `json:"paused"`
	UpdatedAt  *time.Time       `json:"updated_at"` // null: never set
	UpdatedBy  *string          `json:"updated_by"`
	Counts     map[string]int64 `json:"counts"` // every state, zeros included
	// DefaultTarget is where its tasks that name no target run; null: the
	// node's default target.
	DefaultTarget *string    `json:"default_target"`
	Retry         *RetryJSON `json:"retry"` // the wait before a retry of its tasks; null: the default back-off
	// ResultRows is how many rows of their result sets its attempts keep
	// (0: none, the default; docs/QUEUE.md, "Result output").
	ResultRows int `json:"result_rows"`
}

func toQueue(q queue.Queue) Queue {
	o := Queue{Name: q.Name, Workers: q.Workers, MaxRunning: q.MaxRunning, Paused: q.Paused, DefaultTarget: orNull(q.DefaultTarget),
		UpdatedAt: optTime(q.UpdatedAt), UpdatedBy: orNull(q.UpdatedBy), Counts: map[string]int64{}, Retry: toRetry(q.Retry),
		ResultRows: q.ResultRows}
	for _, st := range queue.States {
		o.Counts[string(st)] = q.Counts[st]
	}
	return o
}

// listQueues is GET /api/queues.
func (h *Handler) listQueues(c echo.Context) error {
	if _, err := queryParams(c); err != nil {
		return err
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	qs, err := h.d.Store.Queues(ctx)
	if err != nil {
		return err
	}
	out := make([]Queue, len(qs))
	for i, q := range qs {
		out[i] = toQueue(q)
	}
	return WriteJSON(c, http.StatusOK, map[string]any{"queues": out})
}

// optional is a JSON field that may be absent, null, or a value.
type optional[T any] struct {
	Set, Null bool
	V         T
}

// UnmarshalJSONFrom implements json.UnmarshalerFrom.
func (o *optional[T]) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	o.Set = true
	if dec.PeekKind() == 'n' {
		o.Null = true
		_, err := dec.ReadToken()
		return err
	}
	return json.UnmarshalDecode(dec, &o.V)
}

// ptr is the field's value (its zero value when null), or nil when absent.
func (o optional[T]) ptr() *T {
	if !o.Set {
		return nil
	}
	v := o.V
	return &v
}

// queuePatch is PATCH /api/queues/{name}; absent fields stay as they are.
type queuePatch struct {
	Workers    optional[int]       `json:"workers"`
	MaxRunning optional[int]       `json:"max_running"` // null clears the limit
	Paused     optional[bool]      `json:"paused"`
	Retry      optional[RetryJSON] `json:"retry"` // null: back to the default back-off
	// DefaultTarget: null or "" clears it.
	DefaultTarget optional[string] `json:"default_target"`
	ResultRows    optional[int]    `json:"result_rows"` // 0 keeps no result output
}

// updateQueue is PATCH /api/queues/{name}: every node applies it within a second.
func (h *Handler) updateQueue(c echo.Context) error {
	var in queuePatch
	if err := h.decodeJSON(c, &in); err != nil {
		return err
	}
	var u queue.QueueUpdate
	switch {
	case !in.Workers.Set && !in.MaxRunning.Set && !in.Paused.Set && !in.DefaultTarget.Set && !in.Retry.Set && !in.ResultRows.Set:
		return &queue.ValidationError{Field: "body", Reason: "changes nothing: give workers, max_running, paused, default_target, retry or result_rows"}
	case in.ResultRows.Null:
		return &queue.ValidationError{Field: "result_rows", Reason: "cannot be null: give 0 (keep no result output) to 1000 rows per attempt"}
	case in.Workers.Null:
		return &queue.ValidationError{Field: "workers", Reason: "cannot be null: give 0 to 1000 workers per node"}
	case in.Paused.Null:
		return &queue.ValidationError{Field: "paused", Reason: "cannot be null: give true or false"}
	}
	if in.Workers.Set {
		u.Workers = &in.Workers.V
	}
	if in.MaxRunning.Null {
		u.ClearMaxRunning = true
	} else if in.MaxRunning.Set {
		u.MaxRunning = &in.MaxRunning.V
	}
	if in.Paused.Set {
		u.Paused = &in.Paused.V
	}
	if in.DefaultTarget.Set {
		u.DefaultTarget = &in.DefaultTarget.V // null: ""
	}
	u.ResultRows = in.ResultRows.ptr()
	if in.Retry.Null {
		u.ClearRetry = true
	} else if in.Retry.Set {
		p := in.Retry.V.policy()
		u.Retry = &p
	}
	q, err := h.d.Ops.UpdateQueue(c.Request().Context(), auth.Actor(c), request.PathParam(c, "name"), u)
	if err != nil {
		return err
	}
	return WriteJSON(c, http.StatusOK, toQueue(*q))
}
