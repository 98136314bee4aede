package ui

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/web/templates"
)

// groups is the groups page (viewer): every group's limit, running and
// pending tasks, and who changed the limit last; operators set it in place.
func (u *Pages) groups(c echo.Context) error {
	return u.renderGroups(c, http.StatusOK, "", "", "")
}

// renderGroups draws the page; a refused limit (group, value, reason) shows
// in its row.
func (u *Pages) renderGroups(c echo.Context, status int, refused, value, reason string) error {
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	gs, err := u.store.Groups(ctx)
	if err != nil {
		return err
	}
	v := templates.Groups{Page: u.page(c, "groups", "Groups", templates.Live{}, nil)}
	now := u.now()
	for _, g := range gs {
		row := templates.GroupRow{Name: g.Name, MaxRunning: strconv.Itoa(g.MaxRunning), Running: g.Running, Pending: g.Pending,
			TasksURL: withQuery("/tasks", "group", g.Name), UpdateURL: "/groups/" + url.PathEscape(g.Name),
			UpdatedBy: g.UpdatedBy, UpdatedAt: showTime(g.UpdatedAt, now)}
		if g.Name == refused {
			row.MaxRunning, row.Error = value, reason
		}
		v.Groups = append(v.Groups, row)
	}
	return render(c, status, templates.GroupsPage(v))
}

// groupLimit reads a group's limit field.
func groupLimit(v string) (int, string) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, strconv.Quote(v) + " is not a whole number: give how many of the group's tasks may run at once"
	}
	if err := queue.CheckGroupLimit("group", n); err != nil {
		if ve, ok := err.(*queue.ValidationError); ok {
			return 0, ve.Reason
		}
		return 0, err.Error()
	}
	return n, ""
}
