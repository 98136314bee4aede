package ui

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/web/auth"
	"readpast/internal/web/request"
	"readpast/web/templates"
)

// zoneSuggestions are offered in the time zone field; any IANA name is taken.
var zoneSuggestions = []string{"UTC", "Europe/London", "Europe/Paris", "Europe/Berlin", "Europe/Moscow",
	"America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles", "America/Sao_Paulo",
	"Asia/Kolkata", "Asia/Shanghai", "Asia/Tokyo", "Australia/Sydney"}

// newScheduleForm shows the form that creates a schedule (?queue= preselects a queue).
func (u *Pages) newScheduleForm(c echo.Context) error {
	return u.renderScheduleForm(c, http.StatusOK, templates.ScheduleEdit{Action: "/schedules/new",
		Form: templates.ScheduleForm{Queue: c.QueryParam("queue")}})
}

// editScheduleForm shows a schedule's definition in the form, with its next
// fire times.
func (u *Pages) editScheduleForm(c echo.Context) error {
	name, err := request.ScheduleName(c)
	if err != nil {
		return err
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	s, err := u.store.GetSchedule(ctx, name)
	if err != nil {
		return err
	}
	return u.renderScheduleForm(c, http.StatusOK, templates.ScheduleEdit{Edit: true, Action: scheduleURL(name) + "/edit",
		Form: formOf(s), Preview: showFireTimes(ops.UpcomingFires(s, ops.UpcomingShown))})
}

func (u *Pages) renderScheduleForm(c echo.Context, status int, v templates.ScheduleEdit) error {
	title := "New schedule"
	if v.Edit {
		title = "Edit schedule " + v.Form.Name
	}
	var err error
	if v.Page, v.Queues, err = u.formPage(c, "schedules", title); err != nil {
		return err
	}
	v.Zones = zoneSuggestions
	return render(c, status, templates.ScheduleFormPage(v))
}

// createSchedule takes the new schedule form: Preview shows it again with
// its next fire times; Create stores it (ops.CreateSchedule).
func (u *Pages) createSchedule(c echo.Context) error {
	form, err := readScheduleForm(c)
	if err != nil {
		return err
	}
	form.Name = strings.TrimSpace(c.FormValue("name"))
	v := templates.ScheduleEdit{Action: "/schedules/new", Form: form}
	return u.submitSchedule(c, v, func(d queue.ScheduleDef) error {
		s, err := u.ops.CreateSchedule(c.Request().Context(), auth.Actor(c), d)
		if err != nil {
			return err
		}
		return u.redirectBack(c, scheduleAnchor(s.Name), fmt.Sprintf("Schedule %s created: %s.", s.Name, nextFire(s)))
	})
}

// updateSchedule takes the edit form: Preview shows it again with its next
// fire times; Save writes every field of it (ops.UpdateSchedule), which
// leaves the pause as it is.
func (u *Pages) updateSchedule(c echo.Context) error {
	name, err := request.ScheduleName(c)
	if err != nil {
		return err
	}
	form, err := readScheduleForm(c)
	if err != nil {
		return err
	}
	form.Name = name
	v := templates.ScheduleEdit{Edit: true, Action: scheduleURL(name) + "/edit", Form: form}
	return u.submitSchedule(c, v, func(d queue.ScheduleDef) error {
		s, err := u.ops.UpdateSchedule(c.Request().Context(), auth.Actor(c), name, wholeUpdate(d))
		if err != nil {
			return err
		}
		return u.redirectBack(c, scheduleAnchor(s.Name), fmt.Sprintf("Schedule %s saved: %s.", s.Name, nextFire(s)))
	})
}

// submitSchedule previews or saves the form v holds. A refusal, the form's
// or the store's, shows the form again with the message next to its field.
func (u *Pages) submitSchedule(c echo.Context, v templates.ScheduleEdit, save func(queue.ScheduleDef) error) error {
	d, errs := parseScheduleForm(v.Form)
	if len(errs) > 0 {
		v.Errors = errs
		return u.renderScheduleForm(c, http.StatusUnprocessableEntity, v)
	}
	var err error
	if c.FormValue("action") == "preview" {
		var times []time.Time
		if times, err = u.ops.PreviewSchedule(d, u.now(), ops.UpcomingShown); err == nil {
			v.Preview = showFireTimes(times)
			return u.renderScheduleForm(c, http.StatusOK, v)
		}
	} else if err = save(d); err == nil {
		return nil
	}
	if v.Errors, err = scheduleRefusal(err, d.Name); err != nil {
		return err
	}
	return u.renderScheduleForm(c, http.StatusUnprocessableEntity, v)
}

// scheduleRefusal turns a refusal into the form's messages; any other error
// is returned (a schedule deleted meanwhile is a 404).
func scheduleRefusal(err error, name string) (map[string]string, error) {
	var ve *queue.ValidationError
	switch {
	case errors.As(err, &ve):
		field, msg := formField(ve)
		return map[string]string{field: msg}, nil
	case errors.Is(err, queue.ErrExists):
		return map[string]string{"name": fmt.Sprintf("a schedule named %s exists already: choose another name, or edit that one", name)}, nil
	}
	return nil, err
}

// readScheduleForm reads the posted fields as typed (the name aside); a
// checkbox's value that no checkbox sends is refused (formBool).
func readScheduleForm(c echo.Context) (templates.ScheduleForm, error) {
	v := func(name string) string { return strings.TrimSpace(c.FormValue(name)) }
	f := templates.ScheduleForm{
		Cron: v("cron"), TimeZone: v("time_zone"), Queue: v("queue"), Body: strings.ReplaceAll(c.FormValue("body"), "\r\n", "\n"),
		Priority: v("priority"), Group: v("group"), MaxAttempts: v("max_attempts"), TimeoutSeconds: v("timeout_seconds"),
		Overlap: v("overlap"), Misfire: v("misfire"), Target: v("target"), Targets: v("targets"), FanOutLimit: v("fanout_limit"),
	}
	return f, formBools(c, checkbox{"transactional", &f.Transactional}, checkbox{"paused", &f.Paused})
}

// parseScheduleForm turns the form into a definition. The task template's
// fields are read as the enqueue form reads them; errs names the fields that
// do not parse, and the schedule package checks the rest (schedule.Editor,
// through the operations), naming its field in turn.
func parseScheduleForm(f templates.ScheduleForm) (queue.ScheduleDef, map[string]string) {
	t, errs := parseTaskForm(templates.TaskForm{Queue: f.Queue, Body: f.Body, Priority: f.Priority, Group: f.Group,
		MaxAttempts: f.MaxAttempts, TimeoutSeconds: f.TimeoutSeconds, Transactional: f.Transactional, Target: f.Target}, true)
	d := queue.ScheduleDef{Name: f.Name, Cron: f.Cron, TimeZone: f.TimeZone, Paused: f.Paused,
		Overlap: queue.Overlap(f.Overlap), Misfire: queue.Misfire(f.Misfire),
		Task: queue.ScheduleTask{Queue: t.Queue, Body: t.Body, Priority: t.Priority, Group: t.Group,
			MaxAttempts: t.MaxAttempts, Timeout: t.Timeout, Transactional: t.Transactional, Target: t.Target,
			Targets: splitSelectors(f.Targets)}}
	if f.FanOutLimit != "" {
		n, err := strconv.Atoi(f.FanOutLimit)
		if err != nil || n < 1 {
			if errs == nil {
				errs = map[string]string{}
			}
			errs["fanout_limit"] = fmt.Sprintf("%q is not a number of servers (1 or more)", f.FanOutLimit)
		}
		d.Task.FanOutLimit = n
	}
	return d, errs
}

// wholeUpdate sets every field of the definition but the pause: what the edit
// form shows is what the schedule becomes (an emptied field takes its default).
func wholeUpdate(d queue.ScheduleDef) queue.ScheduleUpdate {
	p := queue.DefaultPriority
	if d.Task.Priority != nil {
		p = *d.Task.Priority
	}
	return queue.ScheduleUpdate{Cron: &d.Cron, TimeZone: &d.TimeZone, Queue: &d.Task.Queue, Body: &d.Task.Body,
		Priority: &p, Group: &d.Task.Group, MaxAttempts: &d.Task.MaxAttempts, Timeout: &d.Task.Timeout,
		Transactional: &d.Task.Transactional, Overlap: &d.Overlap, Misfire: &d.Misfire, Target: &d.Task.Target,
		Targets: &d.Task.Targets, FanOutLimit: &d.Task.FanOutLimit}
}

// formOf is a stored schedule as the form shows it.
func formOf(s *queue.Schedule) templates.ScheduleForm {
	f := templates.ScheduleForm{Name: s.Name, Cron: s.Cron, TimeZone: s.TimeZone, Queue: s.Task.Queue, Body: s.Task.Body,
		Group: s.Task.Group, MaxAttempts: strconv.Itoa(s.Task.MaxAttempts), Transactional: s.Task.Transactional,
		Paused: s.Paused, Overlap: string(s.Overlap), Misfire: string(s.Misfire), Target: s.Task.Target,
		Targets: strings.Join(s.Task.Targets, ", ")}
	if s.Task.FanOutLimit > 0 {
		f.FanOutLimit = strconv.Itoa(s.Task.FanOutLimit)
	}
	if s.Task.Priority != nil {
		f.Priority = strconv.Itoa(*s.Task.Priority)
	}
	if s.Task.Timeout > 0 {
		f.TimeoutSeconds = strconv.FormatFloat(s.Task.Timeout.Seconds(), 'f', -1, 64)
	}
	return f
}

// nextFire says when a schedule fires next, in its zone and in UTC.
func nextFire(s *queue.Schedule) string {
	next := showFireTimes(ops.UpcomingFires(s, 1))
	switch {
	case s.Paused:
		return "paused, it fires nothing until resumed"
	case len(next) == 0:
		return "it fires no more"
	}
	return fmt.Sprintf("next fire %s (%s)", next[0].Local, next[0].UTC)
}
