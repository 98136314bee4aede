package sqlserver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"readpast/internal/queue"
)

// Jobs and their runs (docs/JOBS.md); the batches and their locks are in
// sql_jobs.go and sql_jobs_step.go.

// jsonStep is a plan step as jobStepsJSON reads it.
type jsonStep struct {
	StepIndex       int    `json:"step_index"`
	Name            string `json:"name"`
	Body            string `json:"body"`
	Target          string `json:"target"`
	TimeoutMS       int64  `json:"timeout_ms"`
	Transactional   bool   `json:"transactional"`
	MaxAttempts     int    `json:"max_attempts"`
	RetryIntervalMS int64  `json:"retry_interval_ms"`
	OnSuccess       int    `json:"on_success"`
	OnFailure       int    `json:"on_failure"`
	Targets         string `json:"targets"`
	FanOutLimit     int    `json:"fanout_limit"`
}

// jobDefArgs binds jobDefParams.
func jobDefArgs(j queue.NewJob) ([]any, error) {
	steps := make([]jsonStep, len(j.Steps))
	for i, s := range j.Steps {
		steps[i] = jsonStep{StepIndex: i, Name: s.Name, Body: s.Body, Target: s.Target, TimeoutMS: s.Timeout.Milliseconds(),
			Transactional: s.Transactional, MaxAttempts: s.MaxAttempts, RetryIntervalMS: s.RetryInterval.Milliseconds(),
			OnSuccess: s.OnSuccess, OnFailure: s.OnFailure, Targets: queue.JoinSelectors(s.Targets), FanOutLimit: s.FanOutLimit}
	}
	b, err := json.Marshal(steps)
	if err != nil {
		return nil, err
	}
	return []any{
		sql.Named("name", j.Name), sql.Named("description", j.Description), sql.Named("category", j.Category),
		sql.Named("owner", j.Owner), sql.Named("enabled", j.Enabled), sql.Named("queue", j.Queue),
		sql.Named("overlap", varchar(string(j.Overlap))), sql.Named("definition", maxText(j.Definition)),
		sql.Named("actor", j.Actor), sql.Named("detail", maxText(queue.DescribeJob(j))), sql.Named("steps", maxText(string(b))),
	}, nil
}

// CreateJob implements queue.Store.
func (s *Store) CreateJob(ctx context.Context, j queue.NewJob) error {
	args, err := jobDefArgs(j)
	if err != nil {
		return err
	}
	err = retryDeadlock(ctx, func() error { return s.exec(ctx, createJobBatch.text, args...) })
	switch {
	case isDuplicateKey(err):
		return fmt.Errorf("sqlserver: creating job %s: a job of that name exists: %w", j.Name, queue.ErrExists)
	case err != nil:
		return wrap("creating job "+j.Name, err)
	}
	return nil
}

// ReplaceJob implements queue.Store.
func (s *Store) ReplaceJob(ctx context.Context, j queue.NewJob) error {
	args, err := jobDefArgs(j)
	if err != nil {
		return err
	}
	var id sql.NullInt64
	err = retryDeadlock(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			return c.QueryRowContext(ctx, replaceJobBatch.text, args...).Scan(&id)
		})
	})
	if err != nil {
		return wrap("updating job "+j.Name, err)
	}
	if !id.Valid {
		return fmt.Errorf("sqlserver: job %s: %w", j.Name, queue.ErrNotFound)
	}
	return nil
}

// runDest holds a run's columns while they are scanned, so a LEFT JOIN's
// missing run reads as NULLs.
type runDest struct {
	id, currentTask                        sql.NullInt64
	startStep, stepsRun, currentStep       sql.NullInt32
	started, finished                      sql.NullTime
	job, state, trigger, createdBy, reason sql.NullString
}

func (d *runDest) dest() []any {
	return []any{&d.id, &d.job, &d.state, &d.trigger, &d.startStep, &d.createdBy, &d.started, &d.finished,
		&d.stepsRun, &d.currentStep, &d.currentTask, &d.reason}
}

func (d *runDest) run() *queue.Run {
	if !d.id.Valid {
		return nil
	}
	return &queue.Run{ID: d.id.Int64, Job: d.job.String, State: queue.RunState(d.state.String), Trigger: d.trigger.String,
		StartStep: int(d.startStep.Int32), CreatedBy: d.createdBy.String, StartedAt: utc(d.started), FinishedAt: utc(d.finished),
		StepsRun: int(d.stepsRun.Int32), CurrentStep: int(d.currentStep.Int32), CurrentTaskID: d.currentTask.Int64, Reason: d.reason.String}
}

func scanJob(r *sql.Rows) (queue.Job, error) {
	var (
		j                queue.Job
		d                runDest
		overlap          string
		created, updated sql.NullTime
	)
	err := r.Scan(append([]any{&j.ID, &j.Name, &j.Description, &j.Category, &j.Owner, &j.Enabled, &j.Queue, &overlap,
		&j.Definition, &j.Version, &created, &updated, &j.Actor}, d.dest()...)...)
	j.Overlap, j.CreatedAt, j.UpdatedAt, j.LastRun = queue.Overlap(overlap), utc(created), utc(updated), d.run()
	return j, err
}

func scanStep(r *sql.Rows) (queue.PlanStep, error) {
	var (
		s                  queue.PlanStep
		timeoutMS, retryMS int64
		maxAtt, ok, fail   int32
		targets            string
		limit              int32
	)
	err := r.Scan(&s.Name, &s.Body, &s.Target, &timeoutMS, &s.Transactional, &maxAtt, &retryMS, &ok, &fail, &targets, &limit)
	s.Targets, s.FanOutLimit = queue.SplitSelectors(targets), int(limit)
	s.Timeout, s.RetryInterval = time.Duration(timeoutMS)*time.Millisecond, time.Duration(retryMS)*time.Millisecond
	s.MaxAttempts, s.OnSuccess, s.OnFailure = int(maxAtt), int(ok), int(fail)
	return s, err
}

// GetJob implements queue.Store.
func (s *Store) GetJob(ctx context.Context, name string) (*queue.Job, error) {
	out, err := queryAll(ctx, s.db, jobsQuery.text, []any{sql.Named("name", nullString(name))}, scanJob)
	if err != nil {
		return nil, wrap("reading job "+name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("sqlserver: job %s: %w", name, queue.ErrNotFound)
	}
	j := &out[0]
	j.Steps, err = queryAll(ctx, s.db, jobStepsQuery.text, []any{sql.Named("job_id", j.ID)}, scanStep)
	if err != nil {
		return nil, wrap("reading the steps of job "+name, err)
	}
	return j, nil
}

// Jobs implements queue.Store.
func (s *Store) Jobs(ctx context.Context) ([]queue.Job, error) {
	out, err := queryAll(ctx, s.db, jobsQuery.text, []any{sql.Named("name", nullString(""))}, scanJob)
	return out, wrap("listing jobs", err)
}

// DeleteJob implements queue.Store.
func (s *Store) DeleteJob(ctx context.Context, name, actor string) error {
	var n int
	err := retryDeadlock(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			return c.QueryRowContext(ctx, deleteJobBatch.text, deleteJobArgs(name, actor)...).Scan(&n)
		})
	})
	if err != nil {
		return wrap("deleting job "+name, err)
	}
	if n == 0 {
		return fmt.Errorf("sqlserver: job %s: %w", name, queue.ErrNotFound)
	}
	return nil
}

// startRunArgs binds startRunBatch.
func startRunArgs(r queue.StartRun) []any {
	return []any{sql.Named("job", r.Job), sql.Named("only_if_idle", r.OnlyIfIdle), sql.Named("from", int32(r.From)),
		sql.Named("trigger", varchar(r.Trigger)), sql.Named("actor", r.Actor),
		sql.Named("created_by", queue.StepCreatedBy(r.Job)),
		sql.Named("detail", fmt.Sprintf("from step %d (%s)", r.From+1, r.Trigger)), sql.Named("run_targets", maxText(runTargetsJSON(r.Targets)))}
}

// runTargetsJSON is StartRun.Targets as startRunBatch reads them: a JSON
// array of the target names of each step by plan index, space-separated.
func runTargetsJSON(targets map[int][]string) string {
	n := 0
	for i := range targets {
		n = max(n, i+1)
	}
	out := make([]string, n)
	for i, names := range targets {
		out[i] = queue.JoinSelectors(names)
	}
	b, _ := json.Marshal(out) // strings marshal without error
	return string(b)
}

// StartRun implements queue.Store.
func (s *Store) StartRun(ctx context.Context, r queue.StartRun) (queue.RunStarted, error) {
	var out queue.RunStarted
	err := retryConflicts(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			var err error
			out, err = startRunOn(ctx, c, r)
			return err
		})
	})
	var ve *queue.ValidationError
	if errors.As(err, &ve) || errors.Is(err, queue.ErrNotFound) {
		return queue.RunStarted{}, err
	}
	return out, wrap("starting a run of job "+r.Job, err)
}

// startRunOn runs startRunBatch on c (alone, or inside a fire's transaction).
func startRunOn(ctx context.Context, c *sql.Conn, r queue.StartRun) (queue.RunStarted, error) {
	var (
		jobID, lastRun, runID, taskID sql.NullInt64
		busy                          bool
		steps                         sql.NullInt32
		unresolved                    sql.NullString
	)
	err := c.QueryRowContext(ctx, startRunBatch.text, startRunArgs(r)...).Scan(&jobID, &busy, &lastRun, &steps, &runID, &taskID, &unresolved)
	switch {
	case err != nil:
		return queue.RunStarted{}, err
	case !jobID.Valid:
		return queue.RunStarted{}, fmt.Errorf("sqlserver: job %s: %w", r.Job, queue.ErrNotFound)
	case busy:
		return queue.RunStarted{RunID: lastRun.Int64, Duplicate: true}, nil
	case unresolved.Valid:
		return queue.RunStarted{}, fmt.Errorf("job %s: step %s fans out, but the node starting the run resolved no targets for it: start it again", r.Job, unresolved.String)
	case !runID.Valid:
		return queue.RunStarted{}, &queue.ValidationError{Field: "from_step",
			Reason: fmt.Sprintf("job %s has %d steps: there is no step %d", r.Job, steps.Int32, r.From+1)}
	}
	return queue.RunStarted{RunID: runID.Int64, TaskID: taskID.Int64}, nil
}

// GetRun implements queue.Store.
func (s *Store) GetRun(ctx context.Context, id int64) (*queue.Run, error) {
	runs, err := queryAll(ctx, s.db, runQuery.text, []any{sql.Named("run_id", id)}, scanJobRun)
	if err != nil {
		return nil, wrap(fmt.Sprintf("reading run %d", id), err)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("sqlserver: run %d: %w", id, queue.ErrNotFound)
	}
	run := &runs[0]
	run.Steps, err = queryAll(ctx, s.db, runStepsQuery.text, []any{sql.Named("run_id", id)}, func(r *sql.Rows) (queue.RunStep, error) {
		var (
			st                queue.RunStep
			idx, attempts     int32
			state             string
			started, finished sql.NullTime
			lastErr           sql.NullString
		)
		err := r.Scan(&st.TaskID, &idx, &st.Step, &state, &attempts, &started, &finished, &lastErr, &st.Target)
		st.Index, st.Attempts, st.State = int(idx), int(attempts), queue.State(state)
		st.StartedAt, st.FinishedAt, st.LastError = utc(started), utc(finished), lastErr.String
		return st, err
	})
	if err != nil {
		return nil, wrap(fmt.Sprintf("reading the steps of run %d", id), err)
	}
	return run, nil
}

func scanJobRun(r *sql.Rows) (queue.Run, error) {
	var d runDest
	if err := r.Scan(d.dest()...); err != nil {
		return queue.Run{}, err
	}
	return *d.run(), nil
}

// Runs implements queue.Store.
func (s *Store) Runs(ctx context.Context, q queue.RunQuery) ([]queue.Run, error) {
	before := q.Before
	if before <= 0 {
		before = 1<<63 - 1
	}
	out, err := queryAll(ctx, s.db, runsQuery.text, runsArgs(q.Job, before, q.Limit), scanJobRun)
	return out, wrap("listing the runs of job "+q.Job, err)
}

// maxCancelTries bounds how often CancelRun runs again for a run that moved
// to its next step while it was being cancelled.
const maxCancelTries = 20

// CancelRun implements queue.Store.
func (s *Store) CancelRun(ctx context.Context, id int64, actor string) (queue.RunState, error) {
	if err := checkActor(actor); err != nil {
		return "", err
	}
	for range maxCancelTries {
		var (
			taskID sql.NullInt64
			state  sql.NullString
			moved  bool
		)
		err := retryConflicts(ctx, func() error {
			return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
				return c.QueryRowContext(ctx, cancelRunBatch.text, cancelRunArgs(id, actor)...).Scan(&taskID, &state, &moved)
			})
		})
		switch {
		case err != nil:
			return "", wrap(fmt.Sprintf("cancelling run %d", id), err)
		case !taskID.Valid:
			return "", fmt.Errorf("sqlserver: run %d: %w", id, queue.ErrNotFound)
		case moved:
			continue
		case queue.RunState(state.String) != queue.RunRunning:
			return queue.RunState(state.String), fmt.Errorf("%w: run %d has ended (%s); only a running run can be cancelled",
				queue.ErrInvalidState, id, state.String)
		}
		return queue.RunCancelled, s.cancelFanOut(ctx, id, actor)
	}
	return "", errors.New("sqlserver: cancelling run: it kept moving to its next step while being cancelled; try again")
}

// PurgeRuns implements queue.Store.
func (s *Store) PurgeRuns(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	var n int64
	err := retryDeadlock(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			return c.QueryRowContext(ctx, purgeRunsBatch.text, purgeRunsArgs(cutoff, batch)...).Scan(&n)
		})
	})
	return n, wrap("purging job runs", err)
}

// cancelRunArgs binds cancelRunBatch.
func cancelRunArgs(id int64, actor string) []any {
	return []any{sql.Named("cancel_run", id), sql.Named("actor", actor), sql.Named("reason", queue.RunCancelledReason(actor))}
}

// runsArgs binds runsQuery.
func runsArgs(job string, before int64, limit int) []any {
	return []any{sql.Named("limit", int32(limit)), sql.Named("job", job), sql.Named("before", before)}
}

// purgeRunsArgs binds purgeRunsBatch.
func purgeRunsArgs(cutoff time.Time, batch int) []any {
	return []any{sql.Named("batch", int32(batch)), sql.Named("cutoff", datetime2(cutoff))}
}

// deleteJobArgs binds deleteJobBatch.
func deleteJobArgs(name, actor string) []any {
	return []any{sql.Named("name", name), sql.Named("actor", actor)}
}

// cancelFanOut cancels the other unfinished tasks of a cancelled run's step
// that fans out (cancelRunBatch cancelled its first with the run), each as
// Cancel does, in a transaction of its own: the run is already cancelled, so
// their ends follow nothing, and a task this misses (the node stopping
// between two) runs its attempt out without effect on the run.
func (s *Store) cancelFanOut(ctx context.Context, runID int64, actor string) error {
	ids, err := queryAll(ctx, s.db, runFanOutTasksQuery.text, []any{sql.Named("run_id", runID)}, func(r *sql.Rows) (int64, error) {
		var id int64
		return id, r.Scan(&id)
	})
	if err != nil {
		return wrap(fmt.Sprintf("listing the fan-out of run %d", runID), err)
	}
	for _, id := range ids {
		if _, err := s.Cancel(ctx, id, actor); err != nil && !errors.Is(err, queue.ErrInvalidState) && !errors.Is(err, queue.ErrNotFound) {
			return err
		}
	}
	return nil
}
