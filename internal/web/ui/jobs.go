package ui

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/jobs"
	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/web/auth"
	"readpast/internal/web/request"
	"readpast/web/templates"
)

// The jobs pages (docs/JOBS.md): the list, a job's page, the form, Run now
// and cancel. Every read is bounded: the list reads each job's latest run by
// key, a job's page one keyset page of runs (each run's strip at most
// stripCells step executions) and the chart's last chartRuns runs.

const (
	runsPerPage = 20
	chartRuns   = 30
	stripCells  = 12
	formSteps   = 6 // empty step rows the new job form offers
)

func (u *Pages) registerJobs(e *echo.Echo, view, operate echo.MiddlewareFunc) {
	e.GET("/jobs", u.jobs, view)
	e.GET("/jobs/new", u.newJobForm, operate)
	e.POST("/jobs/new", u.createJob, operate)
	e.GET("/jobs/:name", u.job, view)
	e.GET("/jobs/:name/edit", u.editJobForm, operate)
	e.POST("/jobs/:name/edit", u.updateJob, operate)
	e.POST("/jobs/:name/run", u.runJob, operate)
	e.GET("/runs/:id", u.run, view)
	e.POST("/runs/:id/cancel", u.cancelRun, operate)
}

func runURL(id int64) string { return "/runs/" + strconv.FormatInt(id, 10) }

func jobURL(name string) string { return "/jobs/" + url.PathEscape(name) }

func jobPathName(c echo.Context) (string, error) {
	name := request.PathParam(c, "name")
	if !queue.ValidQueueName(name) {
		return "", &queue.ValidationError{Field: "name", Reason: strconv.Quote(name) + " is not a job name"}
	}
	return name, nil
}

// jobs lists every job with its last run and its next fire time.
func (u *Pages) jobs(c echo.Context) error {
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	list, err := u.store.Jobs(ctx)
	if err != nil {
		return err
	}
	scheds, err := u.store.Schedules(ctx)
	if err != nil {
		return err
	}
	next := map[string]time.Time{}
	for _, s := range scheds {
		if s.Job == "" || s.NextFireAt.IsZero() {
			continue
		}
		if n, ok := next[s.Job]; !ok || s.NextFireAt.Before(n) {
			next[s.Job] = s.NextFireAt
		}
	}
	now := u.now()
	operate := auth.Can(c, auth.Operator)
	rows := make([]templates.JobRow, len(list))
	for i, j := range list {
		r := templates.JobRow{Name: j.Name, URL: jobURL(j.Name), Category: j.Category, Description: firstLine(j.Description, 120),
			Enabled: j.Enabled}
		if j.LastRun != nil {
			run, err := u.store.GetRun(ctx, j.LastRun.ID)
			if err != nil && !errors.Is(err, queue.ErrNotFound) {
				return err
			}
			if run != nil {
				row := runRow(run, now, false, "")
				r.LastRun = &row
			}
		}
		if n, ok := next[j.Name]; ok {
			r.NextFire = dateTime(n).Short + " UTC"
		}
		if operate {
			r.RunAction = &templates.Action{Label: "Run now", URL: jobURL(j.Name) + "/run", Class: "run", Return: "/jobs"}
		}
		rows[i] = r
	}
	v := templates.Jobs{Page: u.page(c, "jobs", "Jobs", templates.Live{}, nil), Rows: rows}
	return render(c, http.StatusOK, templates.JobsPage(v))
}

// runRow lays a run out; cancel adds the Cancel button to a running run.
func runRow(r *queue.Run, now time.Time, cancel bool, back string) templates.RunRow {
	row := templates.RunRow{ID: r.ID, URL: runURL(r.ID), State: string(r.State),
		Trigger: r.Trigger, Started: showTime(r.StartedAt, now).Short, Took: showDuration(r.Duration(now)), Reason: r.Reason}
	for i, s := range r.Steps {
		if i == stripCells {
			row.More = len(r.Steps) - stripCells
			break
		}
		title := fmt.Sprintf("%s: %s (task %d)", s.Step, s.State, s.TaskID)
		if !s.FinishedAt.IsZero() && !s.StartedAt.IsZero() {
			title += ", " + showDuration(s.FinishedAt.Sub(s.StartedAt))
		}
		row.Strip = append(row.Strip, templates.StripCell{Step: s.Step, State: string(s.State), Title: title, URL: taskURL(s.TaskID)})
	}
	if cancel && r.State == queue.RunRunning {
		row.Cancel = &templates.Action{Label: "Cancel", URL: "/runs/" + strconv.FormatInt(r.ID, 10) + "/cancel", Class: "cancel", Return: back}
	}
	return row
}

// job is a job's page.
func (u *Pages) job(c echo.Context) error {
	name, err := jobPathName(c)
	if err != nil {
		return err
	}
	var before int64
	if v := c.QueryParam("cursor"); v != "" {
		if before, err = strconv.ParseInt(v, 10, 64); err != nil || before < 1 {
			return &queue.ValidationError{Field: "cursor", Reason: strconv.Quote(v) + " is not a run id"}
		}
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	j, err := u.store.GetJob(ctx, name)
	if err != nil {
		return err
	}
	d, err := jobs.DefinitionOf(j)
	if err != nil {
		return err
	}
	now := u.now()
	operate := auth.Can(c, auth.Operator)
	v := templates.JobView{Page: u.page(c, "jobs", "Job "+name, templates.Live{}, nil), Name: j.Name, Description: j.Description,
		Category: j.Category, Owner: j.Owner, Queue: j.Queue, Overlap: string(j.Overlap), Enabled: j.Enabled,
		Warnings: jobs.Unreachable(j.Steps)}
	if j.LastRun != nil && j.LastRun.State == queue.RunRunning {
		v.Page.Refresh, v.Page.RefreshURL = followRun, jobURL(j.Name) // the run under way, step by step
	}
	unreachable := map[string]bool{}
	for _, w := range v.Warnings {
		unreachable[strings.Fields(w)[1]] = true
	}
	flow := make([]templates.FlowStep, len(j.Steps))
	for i, s := range j.Steps {
		flow[i] = templates.FlowStep{Name: s.Name, OnSuccess: s.OnSuccess, OnFailure: s.OnFailure, Unreachable: unreachable[s.Name]}
		retry := "none"
		if s.MaxAttempts > 1 {
			retry = fmt.Sprintf("%d × after %s", s.MaxAttempts-1, retryText(s.RetryInterval))
		}
		v.Steps = append(v.Steps, templates.JobStepRow{Index: i, Name: s.Name, Body: firstLine(s.Body, 160),
			OnSuccess: queue.ActionName(j.Steps, s.OnSuccess), OnFailure: queue.ActionName(j.Steps, s.OnFailure), Retry: retry})
		v.StepNames = append(v.StepNames, s.Name)
	}
	v.Flow = templates.FlowOf(flow)
	for i := range d.Schedules {
		sn := jobs.ScheduleName(j.Name, i)
		s, err := u.store.GetSchedule(ctx, sn)
		if errors.Is(err, queue.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		row := templates.JobScheduleRow{Name: sn, Cron: s.Cron, Zone: s.TimeZone, Paused: s.Paused, Next: "paused"}
		if !s.NextFireAt.IsZero() {
			row.Next = "next " + dateTime(s.NextFireAt).Short + " UTC"
		}
		v.Schedules = append(v.Schedules, row)
	}
	runs, err := u.store.Runs(ctx, queue.RunQuery{Job: name, Before: before, Limit: runsPerPage + 1})
	if err != nil {
		return err
	}
	if len(runs) > runsPerPage {
		runs = runs[:runsPerPage]
		v.NextURL = withQuery(jobURL(name), "cursor", strconv.FormatInt(runs[len(runs)-1].ID, 10)) + "#runs"
	}
	for _, r := range runs {
		full, err := u.store.GetRun(ctx, r.ID)
		if err != nil {
			return err
		}
		v.Runs = append(v.Runs, runRow(full, now, operate, jobURL(name)))
	}
	// The chart: the newest chartRuns runs, oldest left, whatever page is shown.
	last, err := u.store.Runs(ctx, queue.RunQuery{Job: name, Limit: chartRuns})
	if err != nil {
		return err
	}
	var ms []int64
	var states, titles, urls []string
	for i := len(last) - 1; i >= 0; i-- {
		r := last[i]
		d := r.Duration(now)
		ms, states = append(ms, d.Milliseconds()), append(states, string(r.State))
		titles = append(titles, fmt.Sprintf("run %d, %s: %s, started %s", r.ID, r.State, showDuration(d), dateTime(r.StartedAt).Short))
		urls = append(urls, runURL(r.ID))
	}
	v.Chart = templates.DurationChartOf(ms, states, titles, urls)
	if operate {
		v.RunURL, v.EditURL = jobURL(name)+"/run", jobURL(name)+"/edit"
	}
	return render(c, http.StatusOK, templates.JobPage(v))
}

func retryText(d time.Duration) string {
	if d <= 0 {
		return "the queue's back-off"
	}
	return d.String()
}

// runJob is the Run now form and button: from the step chosen, or the first.
func (u *Pages) runJob(c echo.Context) error {
	name, err := jobPathName(c)
	if err != nil {
		return err
	}
	from := c.FormValue("from_step")
	r, err := u.ops.RunJob(c.Request().Context(), auth.Actor(c), name, from)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("Job %s: run %d started.", name, r.RunID)
	if r.Duplicate {
		msg = fmt.Sprintf("Job %s was not run: run %d is under way (it skips while a run is unfinished).", name, r.RunID)
	}
	return u.redirectBack(c, jobURL(name)+"#runs", msg)
}

// pathRunID reads the :id path parameter of a run.
func pathRunID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id < 1 {
		return 0, &queue.ValidationError{Field: "id", Reason: strconv.Quote(c.Param("id")) + " is not a run id"}
	}
	return id, nil
}

// followRun is how often (seconds) a job's page and a run's page reload
// themselves while a run is under way, so an operator watches it follow its
// flow; a page of an ended run stays still.
const followRun = 2

// run is one run's page: its steps in execution order (at most
// queue.MaxStepExecutions, by the index of run steps).
func (u *Pages) run(c echo.Context) error {
	id, err := pathRunID(c)
	if err != nil {
		return err
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	r, err := u.store.GetRun(ctx, id)
	if err != nil {
		return err
	}
	now := u.now()
	v := templates.RunView{Page: u.page(c, "jobs", fmt.Sprintf("Run %d of job %s", id, r.Job), templates.Live{}, nil),
		Run: runRow(r, now, auth.Can(c, auth.Operator), runURL(id)), Job: r.Job, JobURL: jobURL(r.Job),
		Started: dateTime(r.StartedAt).Short + " UTC"}
	if r.State == queue.RunRunning {
		v.Page.Refresh = followRun
	}
	for i, s := range r.Steps {
		row := templates.RunStepRow{N: i + 1, Step: s.Step, Target: s.Target, State: string(s.State), TaskURL: taskURL(s.TaskID),
			Started: showTime(s.StartedAt, now).Short, Attempts: s.Attempts, Error: firstLine(s.LastError, 200)}
		if !s.StartedAt.IsZero() && !s.FinishedAt.IsZero() {
			row.Took = showDuration(s.FinishedAt.Sub(s.StartedAt))
		}
		v.Steps = append(v.Steps, row)
	}
	return render(c, http.StatusOK, templates.RunPage(v))
}

// cancelRun is a run's Cancel button.
func (u *Pages) cancelRun(c echo.Context) error {
	id, err := pathRunID(c)
	if err != nil {
		return err
	}
	r, err := u.ops.CancelRun(c.Request().Context(), auth.Actor(c), id)
	if err != nil {
		return err
	}
	return u.redirectBack(c, jobURL(r.Job)+"#runs", fmt.Sprintf("Run %d of job %s cancelled: its current step is stopped and nothing more runs.", id, r.Job))
}

// newJobForm shows the empty job form.
func (u *Pages) newJobForm(c echo.Context) error {
	return u.renderJobForm(c, http.StatusOK, templates.JobEdit{Form: templates.JobForm{Steps: make([]templates.StepForm, formSteps), Schedules: withBlankSchedules(nil)}})
}

func (u *Pages) renderJobForm(c echo.Context, status int, v templates.JobEdit) error {
	title := "New job"
	if v.Edit {
		title = "Edit job " + v.Form.Name
	}
	page, _, err := u.formPage(c, "jobs", title)
	if err != nil {
		return err
	}
	v.Page, v.Action = page, "/jobs/new"
	if v.Edit {
		v.Action = jobURL(v.Form.Name) + "/edit"
	}
	return render(c, status, templates.JobFormPage(v))
}

// editJobForm shows a job's definition in the form.
func (u *Pages) editJobForm(c echo.Context) error {
	name, err := jobPathName(c)
	if err != nil {
		return err
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	j, err := u.store.GetJob(ctx, name)
	if err != nil {
		return err
	}
	d, err := jobs.DefinitionOf(j)
	if err != nil {
		return err
	}
	f := templates.JobForm{Name: d.Name, Description: d.Description, Category: d.Category, Queue: d.Queue}
	for _, s := range d.Schedules {
		f.Schedules = append(f.Schedules, templates.JobScheduleForm{Cron: s.Cron, Zone: s.TimeZone, Misfire: s.Misfire})
	}
	f.Schedules = withBlankSchedules(f.Schedules)
	for _, s := range d.Steps {
		sf := templates.StepForm{Name: s.Name, Body: s.Body, OnSuccess: s.OnSuccess, OnFailure: s.OnFailure,
			Target: s.Target, Targets: strings.Join(s.Targets, ", ")}
		if s.FanOutLimit > 0 {
			sf.FanOutLimit = strconv.Itoa(s.FanOutLimit)
		}
		if s.Timeout > 0 {
			sf.Timeout = time.Duration(s.Timeout).String()
		}
		if s.Transactional {
			sf.Transactional = "true"
		}
		if s.RetryAttempts > 0 {
			sf.RetryAttempts = strconv.Itoa(s.RetryAttempts)
		}
		if s.RetryInterval > 0 {
			sf.RetryInterval = time.Duration(s.RetryInterval).String()
		}
		f.Steps = append(f.Steps, sf)
	}
	for i := 0; i < 2 || len(f.Steps) < formSteps; i++ {
		f.Steps = append(f.Steps, templates.StepForm{})
	}
	return u.renderJobForm(c, http.StatusOK, templates.JobEdit{Form: f, Edit: true})
}

// updateJob takes the edit form (ops.ReplaceJob): runs under way keep the
// plan they started with; the job's other settings (enabled, overlap) stay
// as they are.
func (u *Pages) updateJob(c echo.Context) error {
	name, err := jobPathName(c)
	if err != nil {
		return err
	}
	form, d, errs := readJobForm(c)
	form.Name, d.Name = name, name
	if len(errs) > 0 {
		return u.renderJobForm(c, http.StatusUnprocessableEntity, templates.JobEdit{Form: form, Errors: errs, Edit: true})
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	old, err := u.store.GetJob(ctx, name)
	if err != nil {
		return err
	}
	prev, err := jobs.DefinitionOf(old)
	if err != nil {
		return err
	}
	d.Enabled, d.Overlap = prev.Enabled, prev.Overlap
	j, warnings, err := u.ops.ReplaceJob(c.Request().Context(), auth.Actor(c), d)
	var ve *queue.ValidationError
	switch {
	case errors.As(err, &ve):
		return u.renderJobForm(c, http.StatusUnprocessableEntity, templates.JobEdit{Form: form, Errors: map[string]string{ve.Field: ve.Reason}, Edit: true})
	case err != nil:
		return err
	}
	msg := fmt.Sprintf("Job %s saved with %d steps; runs under way keep the steps they started with.", j.Name, len(j.Steps))
	if len(warnings) > 0 {
		msg += " Warning: " + strings.Join(warnings, "; ") + "."
	}
	return u.redirectBack(c, jobURL(j.Name), msg)
}

// createJob takes the job form (ops.CreateJob): a refusal shows the form
// again with the message next to the field at fault; a created job's page
// says its flow's warnings.
func (u *Pages) createJob(c echo.Context) error {
	form, d, errs := readJobForm(c)
	if len(errs) > 0 {
		return u.renderJobForm(c, http.StatusUnprocessableEntity, templates.JobEdit{Form: form, Errors: errs})
	}
	j, warnings, err := u.ops.CreateJob(c.Request().Context(), auth.Actor(c), d)
	var ve *queue.ValidationError
	switch {
	case errors.As(err, &ve):
		return u.renderJobForm(c, http.StatusUnprocessableEntity, templates.JobEdit{Form: form, Errors: map[string]string{ve.Field: ve.Reason}})
	case errors.Is(err, queue.ErrExists):
		return u.renderJobForm(c, http.StatusUnprocessableEntity, templates.JobEdit{Form: form,
			Errors: map[string]string{"name": fmt.Sprintf("%v: choose another name", errors.Unwrap(err))}})
	case err != nil:
		return err
	}
	msg := fmt.Sprintf("Job %s created with %d steps.", j.Name, len(j.Steps))
	if len(warnings) > 0 {
		msg += " Warning: " + strings.Join(warnings, "; ") + "."
	}
	return u.redirectBack(c, jobURL(j.Name), msg)
}

// wholeField reads an optional whole number of the job form ("": 0),
// naming field in errs when s is not one.
func wholeField(errs map[string]string, field, s string) int {
	if s == "" {
		return 0
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		errs[field] = "is not a whole number"
	}
	return v
}

// durationField reads an optional duration of the job form ("": 0), naming
// field in errs when s is not one.
func durationField(errs map[string]string, field, s string) jobs.Duration {
	if s == "" {
		return 0
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		errs[field] = "is not a duration: write 30s, 5m or 1h"
	}
	return jobs.Duration(v)
}

// readJobForm reads the posted form into the definition the API takes; rows
// without a step name are left out. errs holds what cannot be read at all.
func readJobForm(c echo.Context) (templates.JobForm, jobs.Definition, map[string]string) {
	f := templates.JobForm{Name: strings.TrimSpace(c.FormValue("name")), Description: c.FormValue("description"),
		Category: c.FormValue("category"), Queue: strings.TrimSpace(c.FormValue("queue"))}
	vals, _ := c.FormParams()
	names, bodies := vals["step_name"], vals["step_body"]
	at := func(k string, i int) string {
		if v := vals[k]; i < len(v) {
			return strings.TrimSpace(v[i])
		}
		return ""
	}
	d := jobs.Definition{Name: f.Name, Description: f.Description, Category: f.Category, Queue: f.Queue}
	errs := map[string]string{}
	for i := range names {
		s := templates.StepForm{Name: strings.TrimSpace(names[i]), OnSuccess: at("step_on_success", i), OnFailure: at("step_on_failure", i),
			RetryAttempts: at("step_retry_attempts", i), RetryInterval: at("step_retry_interval", i),
			Target: at("step_target", i), Targets: at("step_targets", i), FanOutLimit: at("step_fanout_limit", i),
			Timeout: at("step_timeout", i), Transactional: at("step_transactional", i)}
		if i < len(bodies) {
			s.Body = bodies[i]
		}
		f.Steps = append(f.Steps, s)
		if s.Name == "" {
			continue
		}
		n := len(d.Steps)
		step := jobs.StepDef{Name: s.Name, Body: s.Body, OnSuccess: s.OnSuccess, OnFailure: s.OnFailure,
			Target: s.Target, Targets: splitSelectors(s.Targets)}
		field := func(name string) string { return fmt.Sprintf("steps[%d].%s", n, name) }
		step.FanOutLimit = wholeField(errs, field("fanout_limit"), s.FanOutLimit)
		step.Timeout = durationField(errs, field("timeout"), s.Timeout)
		step.RetryAttempts = wholeField(errs, field("retry_attempts"), s.RetryAttempts)
		step.RetryInterval = durationField(errs, field("retry_interval"), s.RetryInterval)
		switch s.Transactional {
		case "":
		case "true":
			step.Transactional = true
		default:
			errs[field("transactional")] = "must be yes or no"
		}
		d.Steps = append(d.Steps, step)
	}
	for i, cron := range vals["schedule_cron"] {
		s := templates.JobScheduleForm{Cron: strings.TrimSpace(cron), Zone: at("schedule_time_zone", i), Misfire: at("schedule_misfire", i)}
		if s.Cron == "" {
			continue // a blank row
		}
		f.Schedules = append(f.Schedules, s)
		d.Schedules = append(d.Schedules, jobs.ScheduleDef{Cron: s.Cron, TimeZone: s.Zone, Misfire: s.Misfire})
	}
	f.Schedules = withBlankSchedules(f.Schedules)
	for len(f.Steps) < formSteps {
		f.Steps = append(f.Steps, templates.StepForm{})
	}
	return f, d, errs
}

// withBlankSchedules adds the empty rows the job form offers for new
// schedules: one more than the job has, at least two, and no more than a
// job may have (jobs.MaxSchedules).
func withBlankSchedules(rows []templates.JobScheduleForm) []templates.JobScheduleForm {
	for len(rows) < jobs.MaxSchedules && (len(rows) < 2 || rows[len(rows)-1].Cron != "") {
		rows = append(rows, templates.JobScheduleForm{})
	}
	return rows
}
