package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"readpast/internal/queue"
	"readpast/internal/workers"
	"readpast/web/templates"
)

// taskRow turns a task into its table row; operate adds the cancel and retry
// buttons, which come back to back.
func taskRow(t *queue.Task, now time.Time, operate bool, back string) templates.TaskRow {
	r := templates.TaskRow{
		ID: t.ID, URL: taskURL(t.ID), Queue: t.Queue, State: string(t.State), Priority: t.Priority,
		Attempts: fmt.Sprintf("%d/%d", t.Attempts, t.MaxAttempts), Group: t.Group,
		Created: showTime(t.CreatedAt, now), Started: showTime(t.StartedAt, now),
		Body: firstLine(t.Body, 90), Error: firstLine(t.LastError, 120),
	}
	if t.Name != "" { // shown instead of the body's first line
		r.Body = firstLine(t.Name, 90)
	}
	if t.Chain != "" {
		r.Chain = t.Chain + ":" + strconv.Itoa(t.Stage)
	}
	switch {
	case !t.FinishedAt.IsZero() && !t.StartedAt.IsZero():
		r.Duration = showDuration(t.FinishedAt.Sub(t.StartedAt))
	case t.State == queue.StateRunning && !t.StartedAt.IsZero():
		r.Duration = runningFor(t.StartedAt, now)
	}
	if t.State == queue.StatePending {
		r.Waiting, r.WaitingAt = briefWait(t, now)
	}
	if t.State == queue.StateRunning && t.CancelRequested {
		r.Waiting = "cancelling"
	}
	if operate {
		r.Actions, r.Pick = taskActions(t, back), true
	}
	return r
}

// briefWait says in a word why a pending task from a list is not claimable;
// the task page gives the full reason (Store.Get fills Why). A wait of up to
// two days reads as a countdown ("in 3h10m"); a longer one as the date it
// ends ("until" and at), since "in 1130d14h" tells a DBA nothing.
func briefWait(t *queue.Task, now time.Time) (string, templates.Time) {
	switch {
	case t.ChainWait:
		return "after earlier stage", templates.Time{}
	case t.AvailableAt.After(now):
		d := t.AvailableAt.Sub(now)
		if d > farWait {
			at := dateTime(t.AvailableAt)
			if t.Attempts > 0 {
				return "retry at", at
			}
			return "until", at
		}
		if t.Attempts > 0 {
			return "retry in " + showDuration(d), templates.Time{}
		}
		return "in " + showDuration(d), templates.Time{}
	}
	return "", templates.Time{}
}

// farWait is how far ahead a wait is shown as a date rather than a countdown.
const farWait = 48 * time.Hour

// taskActions are the buttons a task's state allows.
func taskActions(t *queue.Task, back string) []templates.Action {
	id := strconv.FormatInt(t.ID, 10)
	switch t.State {
	case queue.StatePending, queue.StateRunning:
		if t.CancelRequested {
			return nil
		}
		return []templates.Action{{Label: "Cancel", URL: "/tasks/" + id + "/cancel", Class: "danger", Return: back}}
	case queue.StateFailed, queue.StateCancelled:
		return []templates.Action{{Label: "Retry", URL: "/tasks/" + id + "/retry", Return: back}}
	}
	return nil
}

// attemptRow turns an execution-log record into its table row.
func attemptRow(a queue.AttemptRecord, now time.Time) templates.AttemptRow {
	r := templates.AttemptRow{
		ID: a.ID, TaskID: a.TaskID, TaskURL: taskURL(a.TaskID), Attempt: a.Attempt, Queue: a.Queue,
		Node: a.Node, Worker: a.Worker, Session: a.SessionID,
		Started: showTime(a.StartedAt, now), Finished: showTime(a.FinishedAt, now),
		Duration: showDuration(a.Duration), Outcome: string(a.Outcome),
		Rows: templates.FormatCount(a.RowsAffected), Error: a.Error, Messages: a.Messages,
	}
	if a.RowsAffected < 0 {
		r.Rows = ""
	}
	return r
}

// runningAttemptRow is the attempt a running task is at now. The execution log
// writes an attempt's row when it ends, so the task page would otherwise say
// "No attempts yet" under a task that has run for an hour. The node is the
// lease owner's (node/queue); the worker is known only when it runs here.
func runningAttemptRow(t *queue.Task, busy []workers.WorkerInfo, now time.Time) templates.AttemptRow {
	r := templates.AttemptRow{TaskID: t.ID, TaskURL: taskURL(t.ID), Attempt: t.Attempts, Queue: t.Queue,
		Node: strings.TrimSuffix(t.LeaseOwner, "/"+t.Queue), Worker: "—", Session: t.SessionID,
		Started: showTime(t.StartedAt, now), Duration: runningFor(t.StartedAt, now),
		Outcome: string(queue.StateRunning), InProgress: true}
	for _, b := range busy {
		if b.TaskID == t.ID {
			r.Worker = b.Worker
			if r.Session == "" {
				r.Session = b.SessionID
			}
		}
	}
	return r
}
