package ui

import (
	"fmt"

	"github.com/labstack/echo/v4"

	"readpast/internal/web/auth"
	"readpast/internal/web/request"
)

// deleteQueue is the overview's Delete button of a queue that holds no task
// (operator). A queue that does hold tasks, or none of that name, is refused
// with the store's sentence (409, 404).
func (u *Pages) deleteQueue(c echo.Context) error {
	name := request.PathParam(c, "name")
	if err := u.ops.DeleteQueue(c.Request().Context(), auth.Actor(c), name); err != nil {
		return err
	}
	return u.redirectBack(c, "/", fmt.Sprintf("Queue %s deleted.", name))
}
