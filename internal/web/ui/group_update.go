package ui

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"readpast/internal/queue"
	"readpast/internal/web/auth"
	"readpast/internal/web/request"
)

// updateGroup is the groups page's limit form (operator): a group that
// exists gets its new limit, audited; a refused value comes back in its row.
// A URL naming no group is 404, never a new group.
func (u *Pages) updateGroup(c echo.Context) error {
	name := request.PathParam(c, "name")
	value := strings.TrimSpace(c.FormValue("max_running"))
	n, reason := groupLimit(value)
	if reason == "" {
		known, err := u.groupKnown(c, name)
		if err != nil {
			return err
		}
		if !known {
			return fmt.Errorf("group %s: %w", name, queue.ErrNotFound)
		}
		_, err = u.ops.SetGroupLimit(c.Request().Context(), auth.Actor(c), name, n)
		var ve *queue.ValidationError
		switch {
		case errors.As(err, &ve):
			reason = ve.Reason
		case err != nil:
			return err
		default:
			return u.redirectBack(c, "/groups", fmt.Sprintf("Group %s: at most %d running at once.", name, n))
		}
	}
	return u.renderGroups(c, http.StatusUnprocessableEntity, name, value, reason)
}

// groupKnown reports whether a group of that name exists.
func (u *Pages) groupKnown(c echo.Context, name string) (bool, error) {
	gs, err := u.store.Groups(c.Request().Context())
	if err != nil {
		return false, err
	}
	for _, g := range gs {
		if g.Name == name {
			return true, nil
		}
	}
	return false, nil
}
