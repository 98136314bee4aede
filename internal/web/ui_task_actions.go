package web

import (
	"errors"
	"fmt"

	"github.com/labstack/echo/v4"

	"readpast/internal/queue"
)

// cancel cancels a pending task, or asks the worker of a running one to stop
// its statement (at once when it runs on this node, else at its next heartbeat).
func (u *ui) cancel(c echo.Context) error {
	id, err := taskID(c)
	if err != nil {
		return err
	}
	ctx, cancel := storeContext(c)
	defer cancel()
	st, err := u.store.Cancel(ctx, id, u.s.actor(c))
	if errors.Is(err, queue.ErrInvalidState) {
		return u.redirectBack(c, taskURL(id), fmt.Sprintf("Task %d was not cancelled: it has already finished.", id))
	}
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("Task %d cancelled.", id)
	if st == queue.StateRunning {
		u.cancelHere(id)
		msg = fmt.Sprintf("Task %d: cancellation requested; its statement is being stopped.", id)
	}
	return u.redirectBack(c, taskURL(id), msg)
}

// retry puts a failed or cancelled task back to pending with a fresh attempt budget.
func (u *ui) retry(c echo.Context) error {
	id, err := taskID(c)
	if err != nil {
		return err
	}
	ctx, cancel := storeContext(c)
	defer cancel()
	err = u.store.Retry(ctx, id, u.s.actor(c))
	if errors.Is(err, queue.ErrInvalidState) {
		return u.redirectBack(c, taskURL(id), fmt.Sprintf("Task %d was not retried: only failed or cancelled tasks can be.", id))
	}
	if err != nil {
		return err
	}
	if t, err := u.store.Get(ctx, id); err == nil {
		u.wake(t.Queue)
	}
	return u.redirectBack(c, taskURL(id), fmt.Sprintf("Task %d is pending again.", id))
}
