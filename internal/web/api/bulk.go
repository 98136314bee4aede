package api

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/web/auth"
)

// taskFilterNames are the filters of GET /api/tasks, which a bulk request's
// filter takes under the same names (queue.TaskFilter's JSON names).
var taskFilterNames = []string{"state", "queue", "group", "chain", "schedule", "text"}

// taskFilterOf reads the list's filters from a query.
func taskFilterOf(q url.Values) queue.TaskFilter {
	return queue.TaskFilter{State: queue.State(q.Get("state")), Queue: q.Get("queue"), Group: q.Get("group"),
		Chain: q.Get("chain"), Schedule: q.Get("schedule"), Text: q.Get("text")}
}

// Bulk is a bulk operation as the API writes it.
type Bulk struct {
	ID         int64               `json:"id"`
	Action     queue.BulkAction    `json:"action"`
	Selection  queue.BulkSelection `json:"selection"`
	Matched    int64               `json:"matched"`
	Done       int64               `json:"done"`
	Skipped    int64               `json:"skipped"`
	CreatedAt  time.Time           `json:"created_at"`
	CreatedBy  string              `json:"created_by"`
	Node       *string             `json:"node"` // the node running it, null before one claims it
	UpdatedAt  time.Time           `json:"updated_at"`
	FinishedAt *time.Time          `json:"finished_at"`
	Error      *string             `json:"error"`
}

// toBulk is b as the API writes it.
func toBulk(b *queue.BulkOp) Bulk {
	sel, _ := queue.ParseBulkSelection(b.Selection) // written by CreateBulk from a BulkSelection
	out := Bulk{ID: b.ID, Action: b.Action, Selection: sel, Matched: b.Matched, Done: b.Done, Skipped: b.Skipped,
		CreatedAt: b.CreatedAt, CreatedBy: b.CreatedBy, UpdatedAt: b.UpdatedAt, FinishedAt: b.FinishedAt}
	if b.LeaseOwner != "" {
		out.Node = &b.LeaseOwner
	}
	if b.Error != "" {
		out.Error = &b.Error
	}
	return out
}

// bulkTasks is POST /api/tasks/cancel, /retry and /delete with {"filter":
// {...}} (GET /api/tasks's filters) or {"ids": [...]}: the request is
// stored and answered 202 with the operation, which the nodes run in
// batches; GET /api/bulk/{id} follows it.
func (h *Handler) bulkTasks(action queue.BulkAction) echo.HandlerFunc {
	return func(c echo.Context) error {
		var sel queue.BulkSelection
		if err := h.decodeJSON(c, &sel); err != nil {
			return err
		}
		op, err := h.d.Ops.StartBulk(c.Request().Context(), auth.Actor(c), action, sel)
		if err != nil {
			return err
		}
		c.Response().Header().Set(echo.HeaderLocation, "/api/bulk/"+strconv.FormatInt(op.ID, 10))
		return WriteJSON(c, http.StatusAccepted, toBulk(op))
	}
}

// getBulk is GET /api/bulk/{id}: how far a bulk operation got.
func (h *Handler) getBulk(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id < 1 {
		return &queue.ValidationError{Field: "id", Reason: strconv.Quote(c.Param("id")) + " is not a bulk operation's id"}
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	op, err := h.d.Store.GetBulk(ctx, id)
	if err != nil {
		return err
	}
	return WriteJSON(c, http.StatusOK, toBulk(op))
}

// BulkPage is GET /api/bulk.
type BulkPage struct {
	Bulk       []Bulk `json:"bulk"`
	NextCursor *int64 `json:"next_cursor"`
}

// listBulk is GET /api/bulk?limit=&cursor=: bulk operations, newest first.
func (h *Handler) listBulk(c echo.Context) error {
	q, err := queryParams(c, "cursor", "limit")
	if err != nil {
		return err
	}
	before, err := intParam(q, "cursor", 1)
	if err != nil {
		return err
	}
	limit, err := intParam(q, "limit", 1)
	if err != nil {
		return err
	}
	n, err := queue.CheckBulkPage(before, int(min(limit, queue.MaxBulkPage+1)))
	if err != nil {
		return err
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	page, err := h.d.Store.Bulks(ctx, before, n)
	if err != nil {
		return err
	}
	out := BulkPage{Bulk: make([]Bulk, len(page))}
	for i := range page {
		out.Bulk[i] = toBulk(&page[i])
	}
	if len(page) == n {
		next := page[n-1].ID
		out.NextCursor = &next
	}
	return WriteJSON(c, http.StatusOK, out)
}

// TaskCount is GET /api/tasks/count.
type TaskCount struct {
	Count int64 `json:"count"`
	More  bool  `json:"more"` // more than count match: the count stops at its bound
}

// countTasks is GET /api/tasks/count?state=&queue=&…: how many tasks the
// list's filters match, counted up to ops.BulkCountMax.
func (h *Handler) countTasks(c echo.Context) error {
	q, err := queryParams(c, taskFilterNames...)
	if err != nil {
		return err
	}
	n, more, err := h.d.Ops.CountMatching(c.Request().Context(), taskFilterOf(q))
	if err != nil {
		return err
	}
	return WriteJSON(c, http.StatusOK, TaskCount{Count: n, More: more})
}
