package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/jobs"
	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/web/auth"
	"readpast/internal/web/request"
)

// Jobs (docs/JOBS.md, docs/API.md "Jobs"): SQL Server Agent's jobs, and
// their runs. Changes go through the operations; the jobs package checks a
// definition before the store writes anything, and the store audits every
// change as the caller's.

func (h *Handler) registerJobs(g *echo.Group, view, operate echo.MiddlewareFunc) {
	g.GET("/jobs", h.listJobs, auth.NoStore, view)
	g.POST("/jobs", h.createJob, auth.NoStore, operate)
	g.GET("/jobs/:name", h.getJob, auth.NoStore, view)
	g.PATCH("/jobs/:name", h.updateJob, auth.NoStore, operate)
	g.DELETE("/jobs/:name", h.deleteJob, auth.NoStore, operate)
	g.POST("/jobs/:name/run", h.runJob, auth.NoStore, operate)
	g.GET("/jobs/:name/runs", h.listRuns, auth.NoStore, view)
	g.GET("/runs/:id", h.getRun, auth.NoStore, view)
	g.POST("/runs/:id/cancel", h.cancelRun, auth.NoStore, operate)
}

// JobSummary is a job in GET /api/jobs.
type JobSummary struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Category    string    `json:"category"`
	Owner       string    `json:"owner"`
	Enabled     bool      `json:"enabled"`
	Queue       string    `json:"queue"`
	Overlap     string    `json:"overlap"`
	Version     int64     `json:"version"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	UpdatedBy   string    `json:"updated_by"`
	LastRun     *RunJSON  `json:"last_run"`
}

// JobJSON is one job: its summary, its definition's steps as given, and
// the warnings of its flow.
type JobJSON struct {
	JobSummary
	Steps    []jobs.StepDef `json:"steps"`
	Warnings []string       `json:"warnings"`
}

// RunJSON is a run; Steps only in GET /api/runs/{id}.
type RunJSON struct {
	ID         int64      `json:"id"`
	Job        string     `json:"job"`
	State      string     `json:"state"`
	Trigger    string     `json:"trigger"`
	StartStep  int        `json:"start_step"`
	CreatedBy  string     `json:"created_by"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	DurationMS int64      `json:"duration_ms"`
	StepsRun   int        `json:"steps_run"`
	TaskID     int64      `json:"current_task_id"`
	Reason     string     `json:"reason"`
	Steps      []RunStep  `json:"steps,omitempty"`
}

// RunStep is one step execution of a run.
type RunStep struct {
	Step       string     `json:"step"`
	Index      int        `json:"index"`
	TaskID     int64      `json:"task_id"`
	Target     string     `json:"target,omitempty"` // the task's; a step that fans out has one task per target
	Outcome    string     `json:"outcome"`          // the task's state: pending, running, succeeded, failed, cancelled
	Attempts   int        `json:"attempts"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Error      string     `json:"error"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func toRun(r *queue.Run) *RunJSON {
	if r == nil {
		return nil
	}
	out := &RunJSON{ID: r.ID, Job: r.Job, State: string(r.State), Trigger: r.Trigger, StartStep: r.StartStep,
		CreatedBy: r.CreatedBy, StartedAt: r.StartedAt, FinishedAt: timePtr(r.FinishedAt),
		DurationMS: r.Duration(time.Now()).Milliseconds(), StepsRun: r.StepsRun, TaskID: r.CurrentTaskID, Reason: r.Reason}
	for _, s := range r.Steps {
		out.Steps = append(out.Steps, RunStep{Step: s.Step, Index: s.Index, TaskID: s.TaskID, Target: s.Target, Outcome: string(s.State),
			Attempts: s.Attempts, StartedAt: timePtr(s.StartedAt), FinishedAt: timePtr(s.FinishedAt), Error: s.LastError})
	}
	return out
}

func toJobSummary(j *queue.Job) JobSummary {
	return JobSummary{Name: j.Name, Description: j.Description, Category: j.Category, Owner: j.Owner, Enabled: j.Enabled,
		Queue: j.Queue, Overlap: string(j.Overlap), Version: j.Version, CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt,
		UpdatedBy: j.Actor, LastRun: toRun(j.LastRun)}
}

func toJob(j *queue.Job, warnings []string) (JobJSON, error) {
	d, err := jobs.DefinitionOf(j)
	if err != nil {
		return JobJSON{}, err
	}
	if warnings == nil {
		warnings = jobs.Unreachable(j.Steps)
	}
	if warnings == nil {
		warnings = []string{}
	}
	return JobJSON{JobSummary: toJobSummary(j), Steps: d.Steps, Warnings: warnings}, nil
}

// jobName reads the :name path parameter of a job.
func jobName(c echo.Context) (string, error) {
	name := request.PathParam(c, "name")
	if !queue.ValidQueueName(name) {
		return "", &queue.ValidationError{Field: "name", Reason: strconv.Quote(name) + " is not a job name"}
	}
	return name, nil
}

// runID reads the :id path parameter of a run.
func runID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id < 1 {
		return 0, &queue.ValidationError{Field: "id", Reason: strconv.Quote(c.Param("id")) + " is not a run id"}
	}
	return id, nil
}

// listJobs is GET /api/jobs: every job by name with its latest run.
func (h *Handler) listJobs(c echo.Context) error {
	if _, err := queryParams(c); err != nil {
		return err
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	list, err := h.d.Store.Jobs(ctx)
	if err != nil {
		return err
	}
	out := make([]JobSummary, len(list))
	for i := range list {
		out[i] = toJobSummary(&list[i])
	}
	return WriteJSON(c, http.StatusOK, map[string]any{"jobs": out})
}

// getJob is GET /api/jobs/{name}.
func (h *Handler) getJob(c echo.Context) error {
	name, err := jobName(c)
	if err != nil {
		return err
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	j, err := h.d.Store.GetJob(ctx, name)
	if err != nil {
		return err
	}
	out, err := toJob(j, nil)
	if err != nil {
		return err
	}
	return WriteJSON(c, http.StatusOK, out)
}

// createJob is POST /api/jobs: 201 with the job and its flow's warnings;
// 409 when the name is taken.
func (h *Handler) createJob(c echo.Context) error {
	var d jobs.Definition
	if err := h.decodeJSON(c, &d); err != nil {
		return err
	}
	j, warnings, err := h.d.Ops.CreateJob(c.Request().Context(), auth.Actor(c), d)
	if err != nil {
		return err
	}
	out, err := toJob(j, warnings)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/jobs/"+j.Name)
	return WriteJSON(c, http.StatusCreated, out)
}

// jobPatch is PATCH /api/jobs/{name}'s body: the fields given replace the
// job's; steps, when given, replace them all.
type jobPatch struct {
	Description *string         `json:"description"`
	Category    *string         `json:"category"`
	Queue       *string         `json:"queue"`
	Overlap     *string         `json:"overlap"`
	Enabled     *bool           `json:"enabled"`
	Steps       *[]jobs.StepDef `json:"steps"`
}

// updateJob is PATCH /api/jobs/{name}: 200 with the job.
func (h *Handler) updateJob(c echo.Context) error {
	name, err := jobName(c)
	if err != nil {
		return err
	}
	var p jobPatch
	if err := h.decodeJSON(c, &p); err != nil {
		return err
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	old, err := h.d.Store.GetJob(ctx, name)
	if err != nil {
		return err
	}
	d, err := jobs.DefinitionOf(old)
	if err != nil {
		return err
	}
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&d.Description, p.Description)
	set(&d.Category, p.Category)
	set(&d.Queue, p.Queue)
	set(&d.Overlap, p.Overlap)
	if p.Enabled != nil {
		d.Enabled = p.Enabled
	}
	if p.Steps != nil {
		d.Steps = *p.Steps
	}
	j, warnings, err := h.d.Ops.ReplaceJob(ctx, auth.Actor(c), d)
	if err != nil {
		return err
	}
	out, err := toJob(j, warnings)
	if err != nil {
		return err
	}
	return WriteJSON(c, http.StatusOK, out)
}

// deleteJob is DELETE /api/jobs/{name}: 204; its runs stay in the history.
func (h *Handler) deleteJob(c echo.Context) error {
	name, err := jobName(c)
	if err != nil {
		return err
	}
	if err := h.d.Ops.DeleteJob(c.Request().Context(), auth.Actor(c), name); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// runIn is POST /api/jobs/{name}/run's optional body.
type runIn struct {
	FromStep string `json:"from_step"`
}

// runJob is POST /api/jobs/{name}/run: 201 {"run_id": …} with the new run;
// 200 with "duplicate": true and the unfinished run when the job's overlap
// is skip and a run is under way.
func (h *Handler) runJob(c echo.Context) error {
	name, err := jobName(c)
	if err != nil {
		return err
	}
	var in runIn
	if c.Request().ContentLength != 0 {
		if err := h.decodeJSON(c, &in); err != nil {
			return err
		}
	}
	r, err := h.d.Ops.RunJob(c.Request().Context(), auth.Actor(c), name, in.FromStep)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if r.Duplicate {
		status = http.StatusOK
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/runs/"+strconv.FormatInt(r.RunID, 10))
	return WriteJSON(c, status, map[string]any{"run_id": r.RunID, "job": name, "task_id": r.TaskID, "duplicate": r.Duplicate})
}

// RunPage is GET /api/jobs/{name}/runs: newest first, one keyset page.
type RunPage struct {
	Runs       []*RunJSON `json:"runs"`
	NextCursor *int64     `json:"next_cursor"`
}

// listRuns is GET /api/jobs/{name}/runs?cursor=&limit=.
func (h *Handler) listRuns(c echo.Context) error {
	name, err := jobName(c)
	if err != nil {
		return err
	}
	q, err := queryParams(c, "cursor", "limit")
	if err != nil {
		return err
	}
	rq := queue.RunQuery{Job: name}
	if rq.Before, err = intParam(q, "cursor", 1); err != nil {
		return err
	}
	limit, err := intParam(q, "limit", 1)
	if err != nil {
		return err
	}
	rq.Limit = int(min(limit, queue.MaxRunPage+1))
	if rq.Limit, err = queue.CheckRunQuery(rq); err != nil {
		return err
	}
	want := rq.Limit
	if rq.Limit < queue.MaxRunPage {
		rq.Limit++ // one row more, so next_cursor is null on the last page
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	if _, err := h.d.Store.GetJob(ctx, name); err != nil {
		return err
	}
	runs, err := h.d.Store.Runs(ctx, rq)
	if err != nil {
		return err
	}
	more := len(runs) > want || len(runs) == rq.Limit && rq.Limit == want
	runs = runs[:min(len(runs), want)]
	out := RunPage{Runs: make([]*RunJSON, len(runs))}
	for i := range runs {
		out.Runs[i] = toRun(&runs[i])
	}
	if more && len(runs) > 0 {
		next := runs[len(runs)-1].ID
		out.NextCursor = &next
	}
	return WriteJSON(c, http.StatusOK, out)
}

// getRun is GET /api/runs/{id}: the run with its step executions.
func (h *Handler) getRun(c echo.Context) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	r, err := h.d.Store.GetRun(ctx, id)
	if err != nil {
		return err
	}
	return WriteJSON(c, http.StatusOK, toRun(r))
}

// cancelRun is POST /api/runs/{id}/cancel: 200 with the run, cancelled; 409
// when it has ended.
func (h *Handler) cancelRun(c echo.Context) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	r, err := h.d.Ops.CancelRun(c.Request().Context(), auth.Actor(c), id)
	if err != nil {
		return err
	}
	return WriteJSON(c, http.StatusOK, toRun(r))
}
