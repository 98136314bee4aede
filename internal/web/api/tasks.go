package api

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"readpast/internal/logs"
	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/web/auth"
	"readpast/internal/web/request"
)

// createTask is POST /api/tasks: one task, answered 201 with the stored task,
// or 200 with the unfinished task that has its unique key (duplicate).
func (h *Handler) createTask(c echo.Context) error {
	var in taskIn
	if err := h.decodeJSON(c, &in); err != nil {
		return err
	}
	if in.Targets != nil || in.FanOutLimit != nil {
		return h.createFanOut(c, in)
	}
	t, err := in.newTask("", h.d.MaxBodyBytes)
	if err != nil {
		return err
	}
	res, err := h.d.Ops.Enqueue(c.Request().Context(), auth.Actor(c), []queue.NewTask{t})
	if err != nil {
		return err
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	stored, err := h.d.Store.Get(ctx, res[0].ID)
	if err != nil {
		return err
	}
	return answerEnqueued(c, stored, res[0].Duplicate)
}

// answerEnqueued answers an enqueue of one task: 201 with its Location when
// it was created, 200 when duplicate (nothing was created).
func answerEnqueued(c echo.Context, t *queue.Task, duplicate bool) error {
	status := http.StatusOK
	if !duplicate {
		status = http.StatusCreated
		c.Response().Header().Set(echo.HeaderLocation, "/api/tasks/"+strconv.FormatInt(t.ID, 10))
	}
	return WriteJSON(c, status, Enqueued{Task: toTask(t), Duplicate: duplicate})
}

// answerTask answers with the task as the store has it now.
func (h *Handler) answerTask(c echo.Context, status int, id int64) error {
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	t, err := h.d.Store.Get(ctx, id)
	if err != nil {
		return err
	}
	return WriteJSON(c, status, toTask(t))
}

// batchIn is POST /api/tasks/batch. With chain set, the tasks form that chain;
// a task without a stage gets its position × 10 (0, 10, 20, …), so a plain list
// runs in order, and tasks given equal stages run in parallel.
type batchIn struct {
	Chain             *string  `json:"chain"`
	ContinueOnFailure bool     `json:"continue_on_failure"`
	Tasks             []taskIn `json:"tasks"`
}

// createBatch is POST /api/tasks/batch: all tasks in one transaction, or none.
func (h *Handler) createBatch(c echo.Context) error {
	var in batchIn
	if err := h.decodeJSON(c, &in); err != nil {
		return err
	}
	switch {
	case len(in.Tasks) == 0:
		return &queue.ValidationError{Field: "tasks", Reason: "is empty: give at least one task"}
	case len(in.Tasks) > maxBatchTasks:
		return &queue.ValidationError{Field: "tasks", Reason: fmt.Sprintf("has %d tasks: send at most %d per batch", len(in.Tasks), maxBatchTasks)}
	case in.Chain != nil && *in.Chain == "":
		return &queue.ValidationError{Field: "chain", Reason: "is empty: name the chain, or leave it out for independent tasks"}
	case in.Chain != nil && queue.CheckName("chain", *in.Chain) != nil:
		return queue.CheckName("chain", *in.Chain)
	case in.Chain == nil && in.ContinueOnFailure:
		return &queue.ValidationError{Field: "continue_on_failure", Reason: "is set but chain is not: it is a chain's failure policy"}
	}
	tasks := make([]queue.NewTask, len(in.Tasks))
	for i, ti := range in.Tasks {
		prefix := fmt.Sprintf("tasks[%d].", i)
		if in.Chain != nil {
			if ti.Chain != nil && *ti.Chain != *in.Chain {
				return &queue.ValidationError{Field: prefix + "chain", Reason: fmt.Sprintf("is %q but the batch is chain %q: leave it out", *ti.Chain, *in.Chain)}
			}
			if ti.ContinueOnFailure && !in.ContinueOnFailure {
				return &queue.ValidationError{Field: prefix + "continue_on_failure", Reason: "is set on one task: set it on the batch"}
			}
			ti.Chain, ti.ContinueOnFailure = in.Chain, in.ContinueOnFailure
			if ti.Stage == nil {
				stage := i * 10
				ti.Stage = &stage
			}
		}
		if ti.Targets != nil || ti.FanOutLimit != nil {
			return &queue.ValidationError{Field: prefix + "targets", Reason: "is set in a batch: a fan-out is one task to many targets, sent alone to POST /api/tasks"}
		}
		t, err := ti.newTask(prefix, h.d.MaxBodyBytes)
		if err != nil {
			return err
		}
		tasks[i] = t
	}
	res, err := h.d.Ops.Enqueue(c.Request().Context(), auth.Actor(c), tasks)
	if err != nil {
		return err
	}
	out := BatchAnswer{IDs: queue.IDs(res), Duplicate: make([]bool, len(res))}
	status := http.StatusOK // every task was a duplicate: nothing was created
	for i, r := range res {
		out.Duplicate[i] = r.Duplicate
		if !r.Duplicate {
			status = http.StatusCreated
		}
	}
	return WriteJSON(c, status, out)
}

// BatchAnswer is POST /api/tasks/batch's answer: each task's id, in the order
// given, and whether it was a duplicate (an unfinished task of its queue had
// its unique key: that task's id is given and nothing was created for it).
type BatchAnswer struct {
	IDs       []int64 `json:"ids"`
	Duplicate []bool  `json:"duplicate"`
}

// TaskPage is GET /api/tasks.
type TaskPage struct {
	Tasks      []Task `json:"tasks"`
	NextCursor *int64 `json:"next_cursor"`
}

// listTasks is GET /api/tasks?state=&queue=&group=&chain=&schedule=&limit=&cursor=,
// newest first; next_cursor (the last id) fetches the next page.
func (h *Handler) listTasks(c echo.Context) error {
	q, err := queryParams(c, slices.Concat(taskFilterNames, []string{"limit", "cursor"})...)
	if err != nil {
		return err
	}
	p := taskFilterOf(q).Params(0, 0)
	limit, err := intParam(q, "limit", 1)
	if err != nil {
		return err
	}
	if p.Before, err = intParam(q, "cursor", 1); err != nil {
		return err
	}
	p.Limit = int(min(limit, 1<<20))
	if p.Limit, err = queue.CheckList(p); err != nil {
		return err
	}
	// Read one row more than the page, when the store allows it, so that
	// next_cursor is null exactly when nothing follows.
	limit = int64(p.Limit)
	if p.Limit < 1000 {
		p.Limit++
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	var (
		tasks     []*queue.Task
		scannedTo int64 // a text search's window ended here
	)
	if p.Text != "" {
		tasks, scannedTo, err = h.d.Store.Search(ctx, p, queue.SearchWindow)
	} else {
		tasks, err = h.d.Store.List(ctx, p)
	}
	if err != nil {
		return err
	}
	more := len(tasks) > int(limit) || len(tasks) == p.Limit
	tasks = tasks[:min(len(tasks), int(limit))]
	out := TaskPage{Tasks: make([]Task, len(tasks))}
	for i, t := range tasks {
		out.Tasks[i] = toTask(t)
	}
	switch {
	case more:
		next := tasks[len(tasks)-1].ID
		out.NextCursor = &next
	case scannedTo > 0: // the search goes on below its window
		out.NextCursor = &scannedTo
	}
	return WriteJSON(c, http.StatusOK, out)
}

// getTask is GET /api/tasks/{id}: the task, why it waits, and its attempts.
func (h *Handler) getTask(c echo.Context) error {
	id, err := request.TaskID(c)
	if err != nil {
		return err
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	t, err := h.d.Store.Get(ctx, id)
	if err != nil {
		return err
	}
	recs, err := h.d.Store.TaskAttempts(ctx, id)
	if err != nil {
		return err
	}
	d := toTaskDetail(t, recs)
	if d.Results, err = logs.TaskResults(ctx, h.d.Store, id); err != nil {
		return err
	}
	if why := h.whyTarget(ctx, t); why != "" {
		d.Why = &why
	}
	return WriteJSON(c, http.StatusOK, d)
}
