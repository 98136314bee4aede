package ui

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/web/auth"
	"readpast/internal/web/request"
	"readpast/web/templates"
)

// finishedTaskActions are the task page's buttons for a finished task:
// requeue it as a new task, delete it with its log rows.
func finishedTaskActions(t *queue.Task) []templates.Action {
	if !t.State.Finished() {
		return nil
	}
	id := strconv.FormatInt(t.ID, 10)
	return []templates.Action{
		{Label: "Requeue", URL: "/tasks/" + id + "/requeue"},
		{Label: "Delete", URL: "/tasks/" + id + "/delete", Class: "danger"},
	}
}

// cloneURL is the enqueue form filled with task id's fields.
func cloneURL(id int64) string { return "/tasks/new?clone=" + strconv.FormatInt(id, 10) }

// cloneForm is the enqueue form filled with a task's fields (ops.CopyOf):
// "clone and edit".
func (u *Pages) cloneForm(c echo.Context, clone string) (templates.TaskForm, error) {
	id, err := strconv.ParseInt(clone, 10, 64)
	if err != nil || id < 1 {
		return templates.TaskForm{}, &queue.ValidationError{Field: "clone", Reason: strconv.Quote(clone) + " is not a task id"}
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	t, err := u.store.Get(ctx, id)
	if err != nil {
		return templates.TaskForm{}, err
	}
	n := ops.CopyOf(t)
	f := templates.TaskForm{Queue: n.Queue, Body: n.Body, Priority: strconv.Itoa(*n.Priority), Group: n.Group,
		MaxAttempts: strconv.Itoa(n.MaxAttempts), Transactional: n.Transactional, UniqueKey: n.UniqueKey, Name: n.Name}
	if n.Timeout > 0 {
		f.TimeoutSeconds = strconv.FormatInt(int64(n.Timeout.Seconds()), 10)
	}
	return f, nil
}

// requeue is the Requeue button (ops.Requeue): the finished task again, as a
// new task, whose page it shows.
func (u *Pages) requeue(c echo.Context) error {
	id, err := request.TaskID(c)
	if err != nil {
		return err
	}
	res, err := u.ops.Requeue(c.Request().Context(), auth.Actor(c), id)
	if errors.Is(err, queue.ErrInvalidState) {
		return u.redirectBack(c, taskURL(id), fmt.Sprintf("Task %d was not requeued: it has not finished.", id))
	}
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("Task %d requeued as task %d.", id, res.ID)
	if res.Duplicate {
		msg = fmt.Sprintf("Not requeued: task %d is unfinished with the same unique key.", res.ID)
	}
	u.flash(c, msg)
	return c.Redirect(http.StatusSeeOther, taskURL(res.ID))
}

// deleteTask is the Delete button (ops.DeleteTask): a finished task and its
// log rows go; the tasks list follows.
func (u *Pages) deleteTask(c echo.Context) error {
	id, err := request.TaskID(c)
	if err != nil {
		return err
	}
	err = u.ops.DeleteTask(c.Request().Context(), auth.Actor(c), id)
	if errors.Is(err, queue.ErrInvalidState) {
		return u.redirectBack(c, taskURL(id), fmt.Sprintf("Task %d was not deleted: only a finished task can be; cancel it first.", id))
	}
	if err != nil {
		return err
	}
	u.flash(c, fmt.Sprintf("Task %d and its log rows were deleted.", id))
	return c.Redirect(http.StatusSeeOther, "/tasks")
}
