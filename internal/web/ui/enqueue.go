package ui

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/sqlscript"
	"readpast/internal/web/auth"
	"readpast/web/templates"
)

// maxScriptBlocks bounds how many stages one script may become.
const maxScriptBlocks = 1000

// enqueueForm shows the enqueue form: one task (?mode=script: a script whose
// GO-separated blocks become the stages of one chain). ?queue= preselects a queue.
func (u *Pages) enqueueForm(c echo.Context) error {
	v := templates.Enqueue{Script: c.QueryParam("mode") == "script", Task: templates.TaskForm{Queue: c.QueryParam("queue")}}
	if clone := c.QueryParam("clone"); clone != "" {
		form, err := u.cloneForm(c, clone)
		if err != nil {
			return err
		}
		v.Task, v.Script = form, false
	}
	return u.renderEnqueue(c, http.StatusOK, v)
}

func (u *Pages) renderEnqueue(c echo.Context, status int, v templates.Enqueue) error {
	var err error
	if v.Page, v.Queues, err = u.formPage(c, "enqueue", "Enqueue"); err != nil {
		return err
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	v.TargetNames = u.targetChoices(ctx)
	return render(c, status, templates.EnqueuePage(v))
}

// enqueue takes the form: it enqueues the task (or the script's chain), wakes
// this node's workers and shows the task (or the chain); a refused field is
// shown again with its message next to it.
func (u *Pages) enqueue(c echo.Context) error {
	form, err := readTaskForm(c)
	if err != nil {
		return err
	}
	script := c.FormValue("mode") == "script"
	v := templates.Enqueue{Script: script, Task: form}
	base, errs := parseTaskForm(form, script)
	var tasks []queue.NewTask
	if len(errs) == 0 {
		if script {
			tasks, errs = scriptTasks(base, u.syntax)
		} else {
			tasks = []queue.NewTask{base}
		}
	}
	if len(errs) > 0 {
		v.Errors = errs
		return u.renderEnqueue(c, http.StatusUnprocessableEntity, v)
	}
	if !script && (form.Targets != "" || form.FanOutLimit != "") {
		group, errs, err := u.fanOutFromForm(c, form, base)
		if err != nil {
			return err
		}
		if len(errs) > 0 {
			v.Errors = errs
			return u.renderEnqueue(c, http.StatusUnprocessableEntity, v)
		}
		u.flash(c, "Fan-out "+group+" enqueued: one task per target.")
		return c.Redirect(http.StatusSeeOther, "/fanouts/"+group)
	}
	res, err := u.ops.Enqueue(c.Request().Context(), auth.Actor(c), tasks)
	ids := queue.IDs(res)
	var ve *queue.ValidationError
	if errors.As(err, &ve) {
		field, msg := formField(ve)
		v.Errors = map[string]string{field: msg}
		return u.renderEnqueue(c, http.StatusUnprocessableEntity, v)
	}
	if err != nil {
		return err
	}
	if !script && res[0].Duplicate {
		u.flash(c, fmt.Sprintf("Already enqueued: task %d is unfinished with that key (%s); nothing new was created.", ids[0], tasks[0].UniqueKey))
		return c.Redirect(http.StatusSeeOther, taskURL(ids[0]))
	}
	q := tasks[0].Queue
	if q == "" {
		q = queue.DefaultQueue
	}
	if script {
		u.flash(c, fmt.Sprintf("Chain %s: %d tasks enqueued on queue %s (ids %d–%d), one stage per block.", tasks[0].Chain, len(ids), q, ids[0], ids[len(ids)-1]))
		return c.Redirect(http.StatusSeeOther, withQuery("/tasks", "chain", tasks[0].Chain))
	}
	u.flash(c, fmt.Sprintf("Task %d enqueued on queue %s.", ids[0], q))
	return c.Redirect(http.StatusSeeOther, taskURL(ids[0]))
}

// readTaskForm reads the posted fields as typed; a checkbox's value that no
// checkbox sends is refused (formBool).
func readTaskForm(c echo.Context) (templates.TaskForm, error) {
	v := func(name string) string { return strings.TrimSpace(c.FormValue(name)) }
	f := templates.TaskForm{
		Queue: v("queue"), Body: strings.ReplaceAll(c.FormValue("body"), "\r\n", "\n"),
		Priority: v("priority"), Delay: v("delay"), AvailableAt: v("available_at"),
		Group: v("group"), Chain: v("chain"), Stage: v("stage"),
		MaxAttempts: v("max_attempts"), TimeoutSeconds: v("timeout_seconds"),
		UniqueKey: v("unique_key"), Target: v("target"), Targets: v("targets"), FanOutLimit: v("fanout_limit"), Name: v("name"),
	}
	return f, formBools(c, checkbox{"transactional", &f.Transactional}, checkbox{"continue_on_failure", &f.ContinueOnFailure})
}

// parseTaskForm turns the form into a task; errs names the fields that do not parse.
// queue.Checked checks the rest (ranges, names) before the store is called,
// and names its field in turn.
func parseTaskForm(f templates.TaskForm, script bool) (queue.NewTask, map[string]string) {
	errs := map[string]string{}
	t := queue.NewTask{Queue: f.Queue, Body: f.Body, Group: f.Group, Chain: f.Chain, Target: f.Target,
		Transactional: f.Transactional, ContinueOnFailure: f.ContinueOnFailure}
	whole := func(field, s string, dst *int) {
		if s == "" {
			return
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			errs[field] = fmt.Sprintf("%q is not a whole number", s)
			return
		}
		*dst = n
	}
	if f.Priority != "" {
		var p int
		whole("priority", f.Priority, &p)
		t.Priority = &p
	}
	whole("max_attempts", f.MaxAttempts, &t.MaxAttempts)
	if f.MaxAttempts != "" && errs["max_attempts"] == "" {
		if err := queue.CheckMaxAttempts(t.MaxAttempts); err != nil {
			errs["max_attempts"] = err.(*queue.ValidationError).Reason
		}
	}
	if !script {
		whole("stage", f.Stage, &t.Stage)
		t.UniqueKey = f.UniqueKey // one key for a chain's many tasks would keep all but the first out
		t.Name = f.Name
	}
	if f.TimeoutSeconds != "" {
		s, err := strconv.ParseFloat(f.TimeoutSeconds, 64)
		if err != nil {
			errs["timeout_seconds"] = fmt.Sprintf("%q is not a number of seconds", f.TimeoutSeconds)
		} else if t.Timeout, err = queue.TimeoutSeconds("timeout_seconds", s); err != nil {
			errs["timeout_seconds"] = err.(*queue.ValidationError).Reason
		}
	}
	if f.Delay != "" {
		d, err := parseDelay(f.Delay)
		if err != nil {
			errs["delay"] = err.Error()
		}
		t.Delay = d
	}
	if f.AvailableAt != "" {
		at, err := parseAvailableAt(f.AvailableAt)
		if err != nil {
			errs["available_at"] = err.Error()
		}
		t.AvailableAt = at
	}
	if f.Delay != "" && f.AvailableAt != "" {
		errs["available_at"] = "give either a delay or a time, not both"
	}
	return t, errs
}

// parseDelay takes a Go duration (90s, 5m, 1h30m) or a plain number of seconds.
func parseDelay(s string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(s, 64); err == nil && n >= 0 && n < 1e9 {
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a delay: write e.g. 90s, 5m or 1h30m", s)
	}
	return d, nil
}

// parseAvailableAt takes the datetime-local value (UTC) or an RFC 3339 time.
func parseAvailableAt(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time: use 2025-01-31T14:30 (UTC) or RFC 3339", s)
}

// scriptTasks splits a script on GO lines (sqlscript, sqlcmd's rules, in the
// target's dialect) into one task per block that is not blank, stages 0, 1,
// 2 … of one chain (named for the operator when the form leaves it empty).
// Each task's body is its block's text exactly as written; a block ended by
// "GO n" keeps that line, so its task runs the block n times as the script
// would have.
func scriptTasks(base queue.NewTask, syntax sqlscript.Syntax) ([]queue.NewTask, map[string]string) {
	blocks, err := sqlscript.Batches(base.Body, syntax)
	switch {
	case err != nil:
		return nil, map[string]string{"body": err.Error()}
	case len(blocks) == 0:
		return nil, map[string]string{"body": "is empty: give the SQL of at least one block"}
	case len(blocks) > maxScriptBlocks:
		return nil, map[string]string{"body": fmt.Sprintf("has %d blocks; a chain from one script has at most %d", len(blocks), maxScriptBlocks)}
	}
	if base.Chain == "" {
		base.Chain = "script-" + time.Now().UTC().Format("20060102-150405") + "-" + randomHex(3)
	}
	tasks := make([]queue.NewTask, len(blocks))
	for i, b := range blocks {
		t := base
		t.Body, t.Stage = b.Text, i
		if b.Repeat > 1 {
			t.Body += b.Separator
		}
		tasks[i] = t
	}
	return tasks, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

var batchField = regexp.MustCompile(`^tasks\[(\d+)\]\.(.+)$`)

// formField maps the store's field name to the form's, and says which block of
// a script was refused.
func formField(ve *queue.ValidationError) (field, msg string) {
	field, msg = ve.Field, ve.Reason
	if m := batchField.FindStringSubmatch(field); m != nil {
		i, _ := strconv.Atoi(m[1])
		field = m[2]
		if field == "body" {
			msg = fmt.Sprintf("block %d %s", i+1, msg)
		}
	}
	switch field {
	case "timeout":
		field = "timeout_seconds"
	case "created_by":
		field = "queue"
	}
	return field, msg
}
