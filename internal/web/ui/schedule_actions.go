package ui

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"readpast/internal/queue"
	"readpast/internal/web/auth"
	"readpast/internal/web/request"
	"readpast/web/templates"
)

// runSchedule is the Run now button (ops.RunSchedule).
func (u *Pages) runSchedule(c echo.Context) error {
	name, err := request.ScheduleName(c)
	if err != nil {
		return err
	}
	t, duplicate, err := u.ops.RunSchedule(c.Request().Context(), auth.Actor(c), name)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("Schedule %s: task %d enqueued on queue %s.", name, t.ID, t.Queue)
	if duplicate {
		msg = fmt.Sprintf("Schedule %s was not run: its latest run, task %d, is still %s (it skips while the last run is unfinished).", name, t.ID, t.State)
	}
	return u.redirectBack(c, scheduleAnchor(name), msg)
}

// pauseSchedule is the Pause button: the schedule fires nothing until resumed.
func (u *Pages) pauseSchedule(c echo.Context) error { return u.setSchedulePaused(c, true) }

// resumeSchedule is the Resume button: the schedule fires again from its next
// fire time after now (what the pause skipped does not run).
func (u *Pages) resumeSchedule(c echo.Context) error { return u.setSchedulePaused(c, false) }

func (u *Pages) setSchedulePaused(c echo.Context, paused bool) error {
	name, err := request.ScheduleName(c)
	if err != nil {
		return err
	}
	s, err := u.ops.UpdateSchedule(c.Request().Context(), auth.Actor(c), name, queue.ScheduleUpdate{Paused: &paused})
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("Schedule %s paused: it fires nothing until resumed.", name)
	if !paused {
		msg = fmt.Sprintf("Schedule %s resumed: %s.", name, nextFire(s))
	}
	return u.redirectBack(c, scheduleAnchor(name), msg)
}

// deleteScheduleForm asks before a schedule is deleted.
func (u *Pages) deleteScheduleForm(c echo.Context) error {
	name, err := request.ScheduleName(c)
	if err != nil {
		return err
	}
	v := templates.ScheduleDelete{Name: name, Action: scheduleURL(name) + "/delete", TasksURL: withQuery("/tasks", "schedule", name),
		Page: u.page(c, "schedules", "Delete schedule "+name, templates.Live{}, nil)}
	return render(c, http.StatusOK, templates.ScheduleDeletePage(v))
}

// deleteSchedule deletes the schedule (ops.DeleteSchedule); its tasks stay.
func (u *Pages) deleteSchedule(c echo.Context) error {
	name, err := request.ScheduleName(c)
	if err != nil {
		return err
	}
	if err := u.ops.DeleteSchedule(c.Request().Context(), auth.Actor(c), name); err != nil {
		return err
	}
	return u.redirectBack(c, "/schedules", fmt.Sprintf("Schedule %s deleted; the tasks it created stay (filter the tasks by schedule %s).", name, name))
}
