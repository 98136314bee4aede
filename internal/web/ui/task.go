package ui

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/web/auth"
	"readpast/internal/web/request"
	"readpast/internal/workers"
	"readpast/web/templates"
)

// task shows one task: its properties, why it waits, its body and every attempt.
func (u *Pages) task(c echo.Context) error {
	id, err := request.TaskID(c)
	if err != nil {
		return err
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	v, err := u.taskView(ctx, id, auth.Can(c, auth.Operator))
	if err != nil {
		return err
	}
	if v.Results, err = u.taskResults(ctx, id); err != nil {
		return err
	}
	v.Page = u.page(c, "tasks", fmt.Sprintf("Task %d", id), templates.Live{View: "task", Query: "id=" + strconv.FormatInt(id, 10)}, nil)
	return render(c, 200, templates.TaskPage(v))
}

// taskView reads a task and its attempts (the live hub uses it too).
func (u *views) taskView(ctx context.Context, id int64, operate bool) (templates.TaskDetail, error) {
	t, err := u.store.Get(ctx, id)
	if err != nil {
		return templates.TaskDetail{}, err
	}
	attempts, err := u.store.TaskAttempts(ctx, id)
	if err != nil {
		return templates.TaskDetail{}, err
	}
	now := u.now()
	v := templates.TaskDetail{ID: t.ID, State: string(t.State), Queue: t.Queue, Why: t.Why, Body: t.Body,
		Error: t.LastError, Props: taskProps(t, now)}
	if t.State == queue.StateRunning && t.CancelRequested {
		v.Why = "cancellation requested: the worker stops the statement at its next heartbeat"
	}
	if operate {
		v.Actions = append(taskActions(t, taskURL(t.ID)), finishedTaskActions(t)...)
		v.CloneURL = cloneURL(t.ID)
	}
	if why := u.whyTarget(ctx, t); why != "" {
		v.Why = why
	}
	v.Activity = u.runningActivity(ctx, t)
	for _, a := range attempts {
		v.Attempts = append(v.Attempts, attemptRow(a, now))
	}
	if t.State == queue.StateRunning {
		var busy []workers.WorkerInfo
		if u.node != nil {
			for _, p := range u.node.Snapshot().Pools {
				busy = append(busy, p.Busy...)
			}
		}
		v.Attempts = append(v.Attempts, runningAttemptRow(t, busy, now))
	}
	return v, nil
}

// taskProps lists a task's fields for the task page, in the order a DBA asks.
func taskProps(t *queue.Task, now time.Time) []templates.KV {
	when := func(x time.Time) string {
		if x.IsZero() {
			return "—"
		}
		return x.UTC().Format("2006-01-02 15:04:05.000")
	}
	orNone := func(s string) string {
		if s == "" {
			return "—"
		}
		return s
	}
	timeout := "none"
	if t.Timeout > 0 {
		timeout = showDuration(t.Timeout)
	}
	chain := "—"
	if t.Chain != "" {
		chain = fmt.Sprintf("%s, stage %d", t.Chain, t.Stage)
		if t.ContinueOnFailure {
			chain += " (continues on failure)"
		}
	}
	props := []templates.KV{
		{Key: "queue", Value: t.Queue},
		{Key: "target", Value: targetShown(t.Target)},
		{Key: "priority", Value: strconv.Itoa(t.Priority)},
		{Key: "attempts", Value: fmt.Sprintf("%d of %d", t.Attempts, t.MaxAttempts)},
		{Key: "group", Value: orNone(t.Group), URL: fanOutURL(t.Group)},
		{Key: "chain", Value: chain},
		{Key: "timeout", Value: timeout},
		{Key: "transactional", Value: strconv.FormatBool(t.Transactional)},
		{Key: "available at", Value: when(t.AvailableAt)},
		{Key: "created", Value: when(t.CreatedAt)},
		{Key: "created by", Value: orNone(t.CreatedBy)},
		{Key: "started", Value: when(t.StartedAt)},
		{Key: "finished", Value: when(t.FinishedAt)},
	}
	if t.UniqueKey != "" {
		props = append(props, templates.KV{Key: "unique key", Value: t.UniqueKey})
	}
	if t.Name != "" {
		props = append([]templates.KV{{Key: "name", Value: t.Name}}, props...)
	}
	if t.Schedule != "" {
		fire := "run now (outside the fire times)"
		if !t.FireAt.IsZero() {
			fire = when(t.FireAt)
		}
		props = append(props,
			templates.KV{Key: "schedule", Value: t.Schedule, URL: scheduleAnchor(t.Schedule)},
			templates.KV{Key: "fire time", Value: fire})
	}
	if t.State == queue.StateRunning {
		props = append(props,
			templates.KV{Key: "running for", Value: runningFor(t.StartedAt, now)},
			templates.KV{Key: "lease owner", Value: orNone(t.LeaseOwner)},
			templates.KV{Key: "lease expires", Value: when(t.LeaseExpiresAt)},
			templates.KV{Key: "session (SPID)", Value: orNone(t.SessionID)})
	}
	return props
}
