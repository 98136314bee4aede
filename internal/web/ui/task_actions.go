package ui

import (
	"errors"
	"fmt"

	"github.com/labstack/echo/v4"

	"readpast/internal/queue"
	"readpast/internal/web/auth"
	"readpast/internal/web/request"
)

// cancel is the Cancel button (ops.Cancel): a pending task is cancelled, a
// running one is asked to stop its statement.
func (u *Pages) cancel(c echo.Context) error {
	id, err := request.TaskID(c)
	if err != nil {
		return err
	}
	st, err := u.ops.Cancel(c.Request().Context(), auth.Actor(c), id)
	if errors.Is(err, queue.ErrInvalidState) {
		return u.redirectBack(c, taskURL(id), fmt.Sprintf("Task %d was not cancelled: it has already finished.", id))
	}
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("Task %d cancelled.", id)
	if st == queue.StateRunning {
		msg = fmt.Sprintf("Task %d: cancellation requested; its statement is being stopped.", id)
	}
	return u.redirectBack(c, taskURL(id), msg)
}

// retry is the Retry button (ops.Retry): a failed or cancelled task is pending
// again with a fresh attempt budget.
func (u *Pages) retry(c echo.Context) error {
	id, err := request.TaskID(c)
	if err != nil {
		return err
	}
	_, err = u.ops.Retry(c.Request().Context(), auth.Actor(c), id)
	if errors.Is(err, queue.ErrInvalidState) {
		return u.redirectBack(c, taskURL(id), fmt.Sprintf("Task %d was not retried: only failed or cancelled tasks can be.", id))
	}
	if err != nil {
		return err
	}
	return u.redirectBack(c, taskURL(id), fmt.Sprintf("Task %d is pending again.", id))
}
