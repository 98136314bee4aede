package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"readpast/internal/queue"
)

// Jobs and their runs (docs/JOBS.md). SQLite's one writer runs each write
// here alone, so a run's start, a step's end and a cancel never interleave.

const jobColumns = `j.id, j.name, j.description, j.category, j.owner, j.enabled, j.queue, j.overlap, j.definition,
	j.version, j.created_at, j.updated_at, j.updated_by`

const jobRunColumns = `r.id, r.job_name, r.state, r.trigger_kind, r.start_step, r.created_by, r.started_at, r.finished_at,
	r.steps_run, r.current_step, r.current_task_id, r.reason`

func scanJob(r scanner, extra ...any) (*queue.Job, error) {
	var (
		j                queue.Job
		enabled          int
		created, updated int64
	)
	err := r.Scan(append([]any{&j.ID, &j.Name, &j.Description, &j.Category, &j.Owner, &enabled, &j.Queue, &j.Overlap,
		&j.Definition, &j.Version, &created, &updated, &j.Actor}, extra...)...)
	j.Enabled, j.CreatedAt, j.UpdatedAt = enabled != 0, fromMicros(created), fromMicros(updated)
	return &j, err
}

// runDest holds a run's columns while they are scanned, so a LEFT JOIN's
// missing run reads as NULLs.
type runDest struct {
	id, startStep, stepsRun, currentStep, currentTask, started, finished sql.NullInt64
	job, state, trigger, createdBy, reason                               sql.NullString
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
		StartStep: int(d.startStep.Int64), CreatedBy: d.createdBy.String, StartedAt: nullMicros(d.started),
		FinishedAt: nullMicros(d.finished), StepsRun: int(d.stepsRun.Int64), CurrentStep: int(d.currentStep.Int64),
		CurrentTaskID: d.currentTask.Int64, Reason: d.reason.String}
}

const jobSelect = `SELECT ` + jobColumns + `, ` + jobRunColumns + `
	FROM readpast_jobs j LEFT JOIN readpast_job_runs r ON r.id = j.last_run_id`

func scanJobWithRun(r scanner) (*queue.Job, error) {
	var d runDest
	j, err := scanJob(r, d.dest()...)
	if err != nil {
		return nil, err
	}
	j.LastRun = d.run()
	return j, nil
}

// CreateJob implements queue.Store.
func (s *Store) CreateJob(ctx context.Context, j queue.NewJob) error {
	return s.write(ctx, "creating job "+j.Name, func(ctx context.Context, tx *sql.Tx, now int64) error {
		var id int64
		err := tx.QueryRowContext(ctx, `INSERT INTO readpast_jobs (name, description, category, owner, enabled, queue, overlap,
			definition, created_at, updated_at, updated_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			j.Name, j.Description, j.Category, j.Owner, boolInt(j.Enabled), j.Queue, string(j.Overlap), j.Definition,
			now, now, j.Actor).Scan(&id)
		if isUniqueViolation(err) {
			return fmt.Errorf("a job named %s exists: %w", j.Name, queue.ErrExists)
		}
		if err != nil {
			return err
		}
		if err := writePlan(ctx, tx, "readpast_job_steps", "job_id", id, j.Steps); err != nil {
			return err
		}
		return s.audit(tx, now, j.Actor, "create_job", "job "+j.Name, queue.DescribeJob(j))
	})
}

// writePlan inserts plan rows keyed by (keyCol, step_index).
func writePlan(ctx context.Context, tx *sql.Tx, table, keyCol string, key int64, steps []queue.PlanStep) error {
	ins, err := tx.PrepareContext(ctx, `INSERT INTO `+table+` (`+keyCol+`, step_index, `+planColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	for i, st := range steps {
		_, err := ins.ExecContext(ctx, key, i, st.Name, st.Body, st.Target, st.Timeout.Milliseconds(), boolInt(st.Transactional),
			st.MaxAttempts, st.RetryInterval.Milliseconds(), st.OnSuccess, st.OnFailure, queue.JoinSelectors(st.Targets), st.FanOutLimit)
		if err != nil {
			return fmt.Errorf("writing step %s: %w", st.Name, err)
		}
	}
	return nil
}

// ReplaceJob implements queue.Store.
func (s *Store) ReplaceJob(ctx context.Context, j queue.NewJob) error {
	return s.write(ctx, "updating job "+j.Name, func(ctx context.Context, tx *sql.Tx, now int64) error {
		var id int64
		err := tx.QueryRowContext(ctx, `UPDATE readpast_jobs SET description = ?, category = ?, owner = ?, enabled = ?,
			queue = ?, overlap = ?, definition = ?, version = version + 1, updated_at = ?, updated_by = ?
			WHERE name = ? RETURNING id`, j.Description, j.Category, j.Owner, boolInt(j.Enabled), j.Queue, string(j.Overlap),
			j.Definition, now, j.Actor, j.Name).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("job %s: %w", j.Name, queue.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM readpast_job_steps WHERE job_id = ?`, id); err != nil {
			return err
		}
		if err := writePlan(ctx, tx, "readpast_job_steps", "job_id", id, j.Steps); err != nil {
			return err
		}
		return s.audit(tx, now, j.Actor, "update_job", "job "+j.Name, queue.DescribeJob(j))
	})
}

// GetJob implements queue.Store.
func (s *Store) GetJob(ctx context.Context, name string) (*queue.Job, error) {
	j, err := scanJobWithRun(s.r.QueryRowContext(ctx, jobSelect+` WHERE j.name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("job %s: %w", name, queue.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading job %s: %w", name, err)
	}
	j.Steps, err = readPlanCtx(ctx, s.r, `SELECT `+planColumns+` FROM readpast_job_steps WHERE job_id = ? ORDER BY step_index`, j.ID)
	if err != nil {
		return nil, fmt.Errorf("reading job %s: %w", name, err)
	}
	return j, nil
}

// Jobs implements queue.Store.
func (s *Store) Jobs(ctx context.Context) ([]queue.Job, error) {
	rows, err := s.r.QueryContext(ctx, jobSelect+` ORDER BY j.name`)
	if err != nil {
		return nil, fmt.Errorf("listing jobs: %w", err)
	}
	defer rows.Close()
	var out []queue.Job
	for rows.Next() {
		j, err := scanJobWithRun(rows)
		if err != nil {
			return nil, fmt.Errorf("listing jobs: %w", err)
		}
		out = append(out, *j)
	}
	return out, rows.Err()
}

// DeleteJob implements queue.Store.
func (s *Store) DeleteJob(ctx context.Context, name, actor string) error {
	return s.write(ctx, "deleting job "+name, func(ctx context.Context, tx *sql.Tx, now int64) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM readpast_jobs WHERE name = ?`, name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("job %s: %w", name, queue.ErrNotFound)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM readpast_schedules WHERE job_name = ?`, name); err != nil {
			return err
		}
		return s.audit(tx, now, actor, "delete_job", "job "+name, "")
	})
}

// StartRun implements queue.Store.
func (s *Store) StartRun(ctx context.Context, r queue.StartRun) (queue.RunStarted, error) {
	var out queue.RunStarted
	err := s.write(ctx, "starting a run of job "+r.Job, func(ctx context.Context, tx *sql.Tx, now int64) error {
		var err error
		out, err = startRunTx(ctx, tx, now, r)
		if err != nil || out.Duplicate {
			return err
		}
		return s.audit(tx, now, r.Actor, "run_job", "job "+r.Job, fmt.Sprintf("run %d from step %d (%s)", out.RunID, r.From+1, r.Trigger))
	})
	return out, err
}

// startRunTx starts a run in the caller's write transaction: the run row, a
// copy of the job's plan, the first step's task.
func startRunTx(ctx context.Context, tx *sql.Tx, now int64, r queue.StartRun) (queue.RunStarted, error) {
	var (
		jobID   int64
		q       string
		lastRun sql.NullInt64
		busy    bool
	)
	err := tx.QueryRowContext(ctx, `SELECT j.id, j.queue, j.last_run_id,
			(j.overlap = 'skip' OR ?) AND EXISTS (SELECT 1 FROM readpast_job_runs r WHERE r.id = j.last_run_id AND r.state = 'running')
		FROM readpast_jobs j WHERE j.name = ?`, boolInt(r.OnlyIfIdle), r.Job).Scan(&jobID, &q, &lastRun, &busy)
	if errors.Is(err, sql.ErrNoRows) {
		return queue.RunStarted{}, fmt.Errorf("job %s: %w", r.Job, queue.ErrNotFound)
	}
	if err != nil {
		return queue.RunStarted{}, err
	}
	if busy {
		return queue.RunStarted{RunID: lastRun.Int64, Duplicate: true}, nil
	}
	plan, err := readPlanCtx(ctx, tx, `SELECT `+planColumns+` FROM readpast_job_steps WHERE job_id = ? ORDER BY step_index`, jobID)
	if err != nil {
		return queue.RunStarted{}, err
	}
	if r.From < 0 || r.From >= len(plan) {
		return queue.RunStarted{}, &queue.ValidationError{Field: "from_step", Reason: fmt.Sprintf("job %s has %d steps: there is no step %d", r.Job, len(plan), r.From+1)}
	}
	if plan, err = queue.RunPlan(r.Job, plan, r.Targets); err != nil {
		return queue.RunStarted{}, err
	}
	var runID int64
	err = tx.QueryRowContext(ctx, `INSERT INTO readpast_job_runs (job_id, job_name, queue, trigger_kind, start_step, created_by,
		started_at, current_step, current_task_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0) RETURNING id`,
		jobID, r.Job, q, r.Trigger, r.From, r.Actor, now, r.From).Scan(&runID)
	if err != nil {
		return queue.RunStarted{}, fmt.Errorf("writing the run: %w", err)
	}
	if err := writePlan(ctx, tx, "readpast_run_steps", "run_id", runID, plan); err != nil {
		return queue.RunStarted{}, err
	}
	taskID, n, err := enqueueRunStep(tx, now, runID, r.From, 1, q, plan[r.From], queue.StepCreatedBy(r.Job))
	if err != nil {
		return queue.RunStarted{}, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE readpast_job_runs SET current_task_id = ?, fanout_left = ? WHERE id = ?`, taskID, n, runID); err != nil {
		return queue.RunStarted{}, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE readpast_jobs SET last_run_id = ? WHERE id = ?`, runID, jobID); err != nil {
		return queue.RunStarted{}, err
	}
	return queue.RunStarted{RunID: runID, TaskID: taskID}, nil
}

// readPlanCtx reads plan rows keyed by id, in step order.
func readPlanCtx(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, id int64) ([]queue.PlanStep, error) {
	rows, err := q.QueryContext(ctx, query, id)
	if err != nil {
		return nil, fmt.Errorf("reading a plan: %w", err)
	}
	defer rows.Close()
	var out []queue.PlanStep
	for rows.Next() {
		st, err := scanStep(rows)
		if err != nil {
			return nil, fmt.Errorf("reading a plan: %w", err)
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// GetRun implements queue.Store.
func (s *Store) GetRun(ctx context.Context, id int64) (*queue.Run, error) {
	var d runDest
	err := s.r.QueryRowContext(ctx, `SELECT `+jobRunColumns+` FROM readpast_job_runs r WHERE r.id = ?`, id).Scan(d.dest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("run %d: %w", id, queue.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading run %d: %w", id, err)
	}
	run := d.run()
	// A run's step executions: at most MaxStepExecutions tasks, by the index
	// of run steps.
	rows, err := s.r.QueryContext(ctx, `SELECT t.id, t.run_step, p.name, t.state, t.attempts, t.started_at, t.finished_at,
			t.last_error, t.target
		FROM readpast_tasks t JOIN readpast_run_steps p ON p.run_id = t.run_id AND p.step_index = t.run_step
		WHERE t.run_id = ? ORDER BY t.id`, id)
	if err != nil {
		return nil, fmt.Errorf("reading the steps of run %d: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			st                queue.RunStep
			started, finished sql.NullInt64
			lastErr           sql.NullString
		)
		if err := rows.Scan(&st.TaskID, &st.Index, &st.Step, &st.State, &st.Attempts, &started, &finished, &lastErr, &st.Target); err != nil {
			return nil, fmt.Errorf("reading the steps of run %d: %w", id, err)
		}
		st.StartedAt, st.FinishedAt, st.LastError = nullMicros(started), nullMicros(finished), lastErr.String
		run.Steps = append(run.Steps, st)
	}
	return run, rows.Err()
}

// Runs implements queue.Store.
func (s *Store) Runs(ctx context.Context, q queue.RunQuery) ([]queue.Run, error) {
	before := q.Before
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+jobRunColumns+` FROM readpast_job_runs r
		WHERE r.job_id = (SELECT id FROM readpast_jobs WHERE name = ?) AND r.id < ? ORDER BY r.id DESC LIMIT ?`,
		q.Job, before, q.Limit)
	if err != nil {
		return nil, fmt.Errorf("listing the runs of job %s: %w", q.Job, err)
	}
	defer rows.Close()
	var out []queue.Run
	for rows.Next() {
		var d runDest
		if err := rows.Scan(d.dest()...); err != nil {
			return nil, fmt.Errorf("listing the runs of job %s: %w", q.Job, err)
		}
		out = append(out, *d.run())
	}
	return out, rows.Err()
}

// CancelRun implements queue.Store: the run ends cancelled first, so the end
// of its current step (now, when pending; when its worker stops, when
// running) finds it ended and starts nothing.
func (s *Store) CancelRun(ctx context.Context, id int64, actor string) (queue.RunState, error) {
	var out queue.RunState
	err := s.write(ctx, "cancelling run "+strconv.FormatInt(id, 10), func(ctx context.Context, tx *sql.Tx, now int64) error {
		var (
			state  queue.RunState
			taskID int64
		)
		err := tx.QueryRowContext(ctx, `SELECT state, current_task_id FROM readpast_job_runs WHERE id = ?`, id).Scan(&state, &taskID)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("run %d: %w", id, queue.ErrNotFound)
		}
		if err != nil {
			return err
		}
		out = state
		if state != queue.RunRunning {
			return fmt.Errorf("%w: run %d has ended (%s); only a running run can be cancelled", queue.ErrInvalidState, id, state)
		}
		_, err = tx.ExecContext(ctx, `UPDATE readpast_job_runs SET state = 'cancelled', finished_at = ?, reason = ? WHERE id = ?`,
			now, queue.RunCancelledReason(actor), id)
		if err != nil {
			return err
		}
		out = queue.RunCancelled
		if _, err := s.cancelTx(tx, now, taskID, actor); err != nil && !errors.Is(err, queue.ErrInvalidState) {
			return err
		}
		// A step that fans out: the rest of its tasks (the run's from
		// current_task_id on, at most queue.MaxFanOut by the run's index).
		rows, err := tx.QueryContext(ctx, `SELECT t.id FROM readpast_job_runs r JOIN readpast_tasks t ON t.run_id = r.id
			AND t.id > r.current_task_id AND t.run_step = r.current_step AND t.state IN ('pending', 'running')
			WHERE r.id = ? AND r.fanout_left > 0`, id)
		if err != nil {
			return err
		}
		var rest []int64
		for rows.Next() {
			var t int64
			if err := rows.Scan(&t); err != nil {
				rows.Close()
				return err
			}
			rest = append(rest, t)
		}
		rows.Close()
		for _, t := range rest {
			if _, err := s.cancelTx(tx, now, t, actor); err != nil && !errors.Is(err, queue.ErrInvalidState) {
				return err
			}
		}
		return s.audit(tx, now, actor, "cancel_run", "run "+strconv.FormatInt(id, 10), fmt.Sprintf("task %d", taskID))
	})
	return out, err
}

// PurgeRuns implements queue.Store.
func (s *Store) PurgeRuns(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	var n int64
	err := s.writeUndurable(ctx, "purging job runs", func(ctx context.Context, tx *sql.Tx, now int64) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM readpast_job_runs WHERE id IN (SELECT id FROM readpast_job_runs
			WHERE state <> 'running' AND finished_at < ? ORDER BY finished_at LIMIT ?)`, micros(cutoff), batch)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}
