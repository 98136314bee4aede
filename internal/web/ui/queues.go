package ui

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"readpast/internal/queue"
	"readpast/internal/web/auth"
	"readpast/internal/web/request"
	"readpast/web/templates"
)

// updateQueue applies the overview's queue controls: the pause/resume button
// (paused=true|false) or the settings form (settings=1 with workers and
// max_running; an empty max_running removes the limit, an empty workers leaves
// the setting as it is).
func (u *Pages) updateQueue(c echo.Context) error {
	name := request.PathParam(c, "name")
	upd, values, errs := parseQueueForm(c, c.FormValue("settings") != "")
	if len(errs) == 0 {
		if err := queue.CheckQueueName("name", name); err != nil {
			return err
		}
		return u.applyQueueUpdate(c, name, upd, values, false)
	}
	return u.renderOverview(c, http.StatusUnprocessableEntity, &queueFormState{Queue: name, Values: values, Errors: errs})
}

// addQueue creates a queue from the overview's "add a queue" form.
func (u *Pages) addQueue(c echo.Context) error {
	name := strings.TrimSpace(c.FormValue("name"))
	upd, values, errs := parseQueueForm(c, true)
	values.Name = name
	if err := queue.CheckQueueName("name", name); err != nil {
		errs["name"] = err.(*queue.ValidationError).Reason
	}
	if len(errs) > 0 {
		return u.renderOverview(c, http.StatusUnprocessableEntity, &queueFormState{Values: values, Errors: errs})
	}
	upd.ClearMaxRunning = false // a new queue has no limit to clear
	return u.applyQueueUpdate(c, name, upd, values, true)
}

// applyQueueUpdate changes a queue (create false: the queue in the URL, which
// must exist) or makes one (create true: the add form), and comes back to the
// overview; a refusal shows the form again with its message.
func (u *Pages) applyQueueUpdate(c echo.Context, name string, upd queue.QueueUpdate, values templates.QueueRow, create bool) error {
	apply := u.ops.UpdateQueue
	if create {
		apply = u.ops.CreateQueue
	}
	if _, err := apply(c.Request().Context(), auth.Actor(c), name, upd); err != nil {
		var ve *queue.ValidationError
		field, reason := "", ""
		switch {
		case errors.As(err, &ve):
			field, reason = ve.Field, ve.Reason
		case create && errors.Is(err, queue.ErrExists):
			field, reason = "name", "a queue of this name exists already: change its settings in its row"
		default:
			return err
		}
		state := &queueFormState{Queue: name, Values: values, Errors: map[string]string{field: reason}}
		if create {
			state.Queue = ""
		}
		return u.renderOverview(c, http.StatusUnprocessableEntity, state)
	}
	return u.redirectBack(c, "/", fmt.Sprintf("Queue %s: %s.", name, upd.Describe()))
}

// parseQueueForm reads paused, and with settings also workers and max_running.
func parseQueueForm(c echo.Context, settings bool) (queue.QueueUpdate, templates.QueueRow, map[string]string) {
	var upd queue.QueueUpdate
	values := templates.QueueRow{Workers: strings.TrimSpace(c.FormValue("workers")), MaxRunning: strings.TrimSpace(c.FormValue("max_running"))}
	errs := map[string]string{}
	switch c.FormValue("paused") {
	case "true":
		t := true
		upd.Paused, values.Paused = &t, true
	case "false":
		f := false
		upd.Paused = &f
	case "":
		if !settings {
			errs["paused"] = "say true or false"
		} else if c.Path() == "/queues" {
			f := false
			upd.Paused = &f
		}
	default:
		errs["paused"] = "say true or false"
	}
	if !settings {
		return upd, values, errs
	}
	if values.Workers != "" {
		n, err := strconv.Atoi(values.Workers)
		if err != nil || n < 0 || n > 1000 {
			errs["workers"] = fmt.Sprintf("%q: use a whole number from 0 to 1000 workers per node", values.Workers)
		} else {
			upd.Workers = &n
		}
	}
	// The default target only when the form changes it (the row's form
	// carries the value it showed): a change of workers is audited as that.
	if _, ok := c.Request().PostForm["default_target"]; ok {
		values.DefaultTarget = strings.TrimSpace(c.FormValue("default_target"))
		if values.DefaultTarget != strings.TrimSpace(c.FormValue("default_target_was")) {
			upd.DefaultTarget = &values.DefaultTarget
		}
	}
	// Result rows likewise, only when changed ("" is 0: none kept).
	if _, ok := c.Request().PostForm["result_rows"]; ok {
		values.ResultRows = strings.TrimSpace(c.FormValue("result_rows"))
		if values.ResultRows != strings.TrimSpace(c.FormValue("result_rows_was")) {
			n, err := strconv.Atoi(cmp.Or(values.ResultRows, "0"))
			if err != nil {
				errs["result_rows"] = fmt.Sprintf("%q: use a whole number of rows from 0 (keep no result output) to %d", values.ResultRows, queue.MaxResultRows)
			} else { // queue.CheckQueueUpdate refuses one out of range
				upd.ResultRows = &n
			}
		}
	}
	if values.MaxRunning == "" {
		upd.ClearMaxRunning = true
	} else {
		n, err := strconv.Atoi(values.MaxRunning)
		if err != nil || n < 1 {
			errs["max_running"] = fmt.Sprintf("%q: use a whole number of at least 1, or leave it empty for no limit", values.MaxRunning)
		} else {
			upd.MaxRunning = &n
		}
	}
	return upd, values, errs
}
