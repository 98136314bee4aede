package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"readpast/internal/queue"
)

// Jobs and their runs (docs/JOBS.md). The end of a step task follows the
// run's plan in the trigger readpast_step_ended (migration 000005), in the
// transaction of the end, whichever path ends it.

const jobColumns = `j.id, j.name, j.description, j.category, j.owner, j.enabled, j.queue, j.overlap, j.definition,
	j.version, j.created_at, j.updated_at, j.updated_by`

const jobRunColumns = `r.id, r.job_name, r.state, r.trigger_kind, r.start_step, r.created_by, r.started_at, r.finished_at,
	r.steps_run, r.current_step, r.current_task_id, r.reason`

const planColumns = `name, body, target, timeout_ms, transactional, max_attempts, retry_interval_ms, on_success, on_failure, targets, fanout_limit`

type scanRow interface{ Scan(...any) error }

// runDest holds a run's columns while they are scanned, so a LEFT JOIN's
// missing run reads as NULLs.
type runDest struct {
	id, currentTask                        *int64
	startStep, stepsRun, currentStep       *int32
	started, finished                      *time.Time
	job, state, trigger, createdBy, reason *string
}

func (d *runDest) dest() []any {
	return []any{&d.id, &d.job, &d.state, &d.trigger, &d.startStep, &d.createdBy, &d.started, &d.finished,
		&d.stepsRun, &d.currentStep, &d.currentTask, &d.reason}
}

func (d *runDest) run() *queue.Run {
	if d.id == nil {
		return nil
	}
	return &queue.Run{ID: *d.id, Job: *d.job, State: queue.RunState(*d.state), Trigger: *d.trigger,
		StartStep: int(*d.startStep), CreatedBy: *d.createdBy, StartedAt: utc(d.started), FinishedAt: utc(d.finished),
		StepsRun: int(*d.stepsRun), CurrentStep: int(*d.currentStep), CurrentTaskID: *d.currentTask, Reason: *d.reason}
}

const jobSelect = `SELECT ` + jobColumns + `, ` + jobRunColumns + `
	FROM readpast_jobs j LEFT JOIN readpast_job_runs r ON r.id = j.last_run_id`

func scanJob(r scanRow) (*queue.Job, error) {
	var (
		j                queue.Job
		d                runDest
		overlap          string
		created, updated time.Time
	)
	err := r.Scan(append([]any{&j.ID, &j.Name, &j.Description, &j.Category, &j.Owner, &j.Enabled, &j.Queue, &overlap,
		&j.Definition, &j.Version, &created, &updated, &j.Actor}, d.dest()...)...)
	if err != nil {
		return nil, err
	}
	j.Overlap, j.CreatedAt, j.UpdatedAt, j.LastRun = queue.Overlap(overlap), created.UTC(), updated.UTC(), d.run()
	return &j, nil
}

func scanStep(r scanRow) (queue.PlanStep, error) {
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

type pgQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func readPlan(ctx context.Context, q pgQuerier, jobID int64) ([]queue.PlanStep, error) {
	rows, err := q.Query(ctx, `SELECT `+planColumns+` FROM readpast_job_steps WHERE job_id = $1 ORDER BY step_index`, jobID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (queue.PlanStep, error) { return scanStep(r) })
}

// writePlan inserts a job's plan rows in one statement.
func writePlan(ctx context.Context, tx pgx.Tx, jobID int64, steps []queue.PlanStep) error {
	n := len(steps)
	var (
		names, bodies, targets = make([]string, n), make([]string, n), make([]string, n)
		timeouts, retries      = make([]int64, n), make([]int64, n)
		trans                  = make([]bool, n)
		maxAtt, ok, fail       = make([]int32, n), make([]int32, n), make([]int32, n)
		sels, limits           = make([]string, n), make([]int32, n)
	)
	for i, s := range steps {
		sels[i], limits[i] = queue.JoinSelectors(s.Targets), int32(s.FanOutLimit)
		names[i], bodies[i], targets[i] = s.Name, s.Body, s.Target
		timeouts[i], retries[i], trans[i] = s.Timeout.Milliseconds(), s.RetryInterval.Milliseconds(), s.Transactional
		maxAtt[i], ok[i], fail[i] = int32(s.MaxAttempts), int32(s.OnSuccess), int32(s.OnFailure)
	}
	_, err := tx.Exec(ctx, `INSERT INTO readpast_job_steps (job_id, step_index, `+planColumns+`)
		SELECT $1, x.ord - 1, x.n, x.b, x.t, x.tm, x.tr, x.m, x.r, x.s, x.f, x.ts, x.l
		  FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::boolean[], $7::integer[], $8::bigint[],
		              $9::integer[], $10::integer[], $11::text[], $12::integer[]) WITH ORDINALITY AS x(n, b, t, tm, tr, m, r, s, f, ts, l, ord)`,
		jobID, names, bodies, targets, timeouts, trans, maxAtt, retries, ok, fail, sels, limits)
	return err
}

func audit(ctx context.Context, tx pgx.Tx, actor, action, target, detail string) error {
	_, err := tx.Exec(ctx, `INSERT INTO readpast_audit (actor, action, target, detail) VALUES ($1, $2, $3, $4)`,
		actor, action, target, detail)
	return err
}

// CreateJob implements queue.Store.
func (s *Store) CreateJob(ctx context.Context, j queue.NewJob) error {
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `INSERT INTO readpast_jobs (name, description, category, owner, enabled, queue, overlap,
			definition, updated_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
			j.Name, j.Description, j.Category, j.Owner, j.Enabled, j.Queue, string(j.Overlap), j.Definition, j.Actor).Scan(&id)
		if err != nil {
			return err
		}
		if err := writePlan(ctx, tx, id, j.Steps); err != nil {
			return err
		}
		return audit(ctx, tx, j.Actor, "create_job", "job "+j.Name, queue.DescribeJob(j))
	})
	if isUniqueViolation(err) {
		return fmt.Errorf("postgres: creating job %s: a job of that name exists: %w", j.Name, queue.ErrExists)
	}
	return wrap(err, "creating job %s", j.Name)
}

// ReplaceJob implements queue.Store.
func (s *Store) ReplaceJob(ctx context.Context, j queue.NewJob) error {
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `UPDATE readpast_jobs SET description = $2, category = $3, owner = $4, enabled = $5,
			queue = $6, overlap = $7, definition = $8, version = version + 1, updated_at = now(), updated_by = $9
			WHERE name = $1 RETURNING id`, j.Name, j.Description, j.Category, j.Owner, j.Enabled, j.Queue,
			string(j.Overlap), j.Definition, j.Actor).Scan(&id)
		if isNoRows(err) {
			return fmt.Errorf("job %s: %w", j.Name, queue.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM readpast_job_steps WHERE job_id = $1`, id); err != nil {
			return err
		}
		if err := writePlan(ctx, tx, id, j.Steps); err != nil {
			return err
		}
		return audit(ctx, tx, j.Actor, "update_job", "job "+j.Name, queue.DescribeJob(j))
	})
	return wrap(err, "updating job %s", j.Name)
}

// GetJob implements queue.Store.
func (s *Store) GetJob(ctx context.Context, name string) (*queue.Job, error) {
	j, err := scanJob(s.pool.QueryRow(ctx, jobSelect+` WHERE j.name = $1`, name))
	if isNoRows(err) {
		return nil, fmt.Errorf("postgres: job %s: %w", name, queue.ErrNotFound)
	}
	if err != nil {
		return nil, wrap(err, "reading job %s", name)
	}
	if j.Steps, err = readPlan(ctx, s.pool, j.ID); err != nil {
		return nil, wrap(err, "reading the steps of job %s", name)
	}
	return j, nil
}

// Jobs implements queue.Store.
func (s *Store) Jobs(ctx context.Context) ([]queue.Job, error) {
	rows, err := s.pool.Query(ctx, jobSelect+` ORDER BY j.name`)
	if err != nil {
		return nil, wrap(err, "listing jobs")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (queue.Job, error) {
		j, err := scanJob(r)
		if err != nil {
			return queue.Job{}, err
		}
		return *j, nil
	})
	return out, wrap(err, "listing jobs")
}

// DeleteJob implements queue.Store.
func (s *Store) DeleteJob(ctx context.Context, name, actor string) error {
	var n int64
	// The job's schedules first: a fire locks its schedule's row before the
	// job's (the lock order of migration 000005).
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM readpast_schedules WHERE job_name = $1`, name); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `WITH d AS (DELETE FROM readpast_jobs WHERE name = $1 RETURNING name),
			a AS (INSERT INTO readpast_audit (actor, action, target, detail) SELECT $2, 'delete_job', 'job ' || d.name, '' FROM d)
			SELECT count(*) FROM d`, name, actor).Scan(&n)
	})
	if err != nil {
		return wrap(err, "deleting job %s", name)
	}
	if n == 0 {
		return fmt.Errorf("postgres: job %s: %w", name, queue.ErrNotFound)
	}
	return nil
}

// StartRun implements queue.Store. The job's row is locked first, so two
// Run now of one job at once start one run when its overlap is skip: the
// second reads the first's run after it commits.
func (s *Store) StartRun(ctx context.Context, r queue.StartRun) (queue.RunStarted, error) {
	var out queue.RunStarted
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		out, err = startRunTx(ctx, tx, r)
		return err
	})
	var ve *queue.ValidationError
	if errors.As(err, &ve) || errors.Is(err, queue.ErrNotFound) {
		return queue.RunStarted{}, err
	}
	return out, wrap(err, "starting a run of job %s", r.Job)
}

// startRunTx starts a run in tx (StartRun, or a fire of the job's schedule
// inside its own transaction).
func startRunTx(ctx context.Context, tx pgx.Tx, r queue.StartRun) (queue.RunStarted, error) {
	var out queue.RunStarted
	err := func() error {
		var (
			jobID, lastRun int64
			q              string
			busy           bool
			steps          int
		)
		err := tx.QueryRow(ctx, `SELECT id FROM readpast_jobs WHERE name = $1 FOR UPDATE`, r.Job).Scan(&jobID)
		if isNoRows(err) {
			return fmt.Errorf("job %s: %w", r.Job, queue.ErrNotFound)
		}
		if err != nil {
			return err
		}
		// A statement of its own, so its snapshot, taken after the lock,
		// sees the run of a start that held the lock before.
		err = tx.QueryRow(ctx, `SELECT j.queue, coalesce(j.last_run_id, 0),
					(j.overlap = 'skip' OR $2) AND EXISTS (SELECT 1 FROM readpast_job_runs r WHERE r.id = j.last_run_id AND r.state = 'running'),
					(SELECT count(*) FROM readpast_job_steps s WHERE s.job_id = j.id)
				FROM readpast_jobs j WHERE j.id = $1`, jobID, r.OnlyIfIdle).Scan(&q, &lastRun, &busy, &steps)
		if err != nil {
			return err
		}
		if busy {
			out = queue.RunStarted{RunID: lastRun, Duplicate: true}
			return nil
		}
		if r.From < 0 || r.From >= steps {
			return &queue.ValidationError{Field: "from_step", Reason: fmt.Sprintf("job %s has %d steps: there is no step %d", r.Job, steps, r.From+1)}
		}
		// The plan's fan-outs get the target names the starting node
		// resolved (the job's row is locked: its plan is the one copied).
		plan, err := readPlan(ctx, tx, jobID)
		if err != nil {
			return err
		}
		if plan, err = queue.RunPlan(r.Job, plan, r.Targets); err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `WITH run AS (
					INSERT INTO readpast_job_runs (job_id, job_name, queue, trigger_kind, start_step, created_by, current_step, current_task_id)
					VALUES ($1, $2, $3, $4, $5, $6, $5, 0) RETURNING id),
				plan AS (
					INSERT INTO readpast_run_steps (run_id, step_index, `+planColumns+`)
					SELECT run.id, s.step_index, s.name, s.body, s.target, s.timeout_ms, s.transactional, s.max_attempts,
					       s.retry_interval_ms, s.on_success, s.on_failure, coalesce(x.targets, ''), s.fanout_limit
					  FROM readpast_job_steps s CROSS JOIN run
					  LEFT JOIN unnest($7::text[]) WITH ORDINALITY AS x(targets, ord) ON x.ord - 1 = s.step_index
					 WHERE s.job_id = $1)
				SELECT id FROM run`, jobID, r.Job, q, r.Trigger, r.From, r.Actor, runTargets(plan)).Scan(&out.RunID)
		if err != nil {
			return err
		}
		// The plan's rows are written by the statement above; the step's
		// task reads them in the next.
		enqueue := `SELECT readpast_enqueue_step($1, $2, $3, $4)`
		if len(plan[r.From].Targets) > 0 {
			enqueue = `SELECT readpast_enqueue_fanout($1, $2, $3, $4, 1)`
		}
		err = tx.QueryRow(ctx, enqueue, out.RunID, r.From, q, queue.StepCreatedBy(r.Job)).Scan(&out.TaskID)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `WITH u AS (UPDATE readpast_job_runs SET current_task_id = $2 WHERE id = $1)
				UPDATE readpast_jobs SET last_run_id = $1 WHERE id = $3`, out.RunID, out.TaskID, jobID)
		if err != nil {
			return err
		}
		return audit(ctx, tx, r.Actor, "run_job", "job "+r.Job, fmt.Sprintf("run %d from step %d (%s)", out.RunID, r.From+1, r.Trigger))
	}()
	return out, err
}

// GetRun implements queue.Store.
func (s *Store) GetRun(ctx context.Context, id int64) (*queue.Run, error) {
	var d runDest
	err := s.pool.QueryRow(ctx, `SELECT `+jobRunColumns+` FROM readpast_job_runs r WHERE r.id = $1`, id).Scan(d.dest()...)
	if isNoRows(err) {
		return nil, fmt.Errorf("postgres: run %d: %w", id, queue.ErrNotFound)
	}
	if err != nil {
		return nil, wrap(err, "reading run %d", id)
	}
	run := d.run()
	// A run's step executions: at most MaxStepExecutions tasks, by the index
	// of run steps.
	rows, err := s.pool.Query(ctx, `SELECT t.id, t.run_step, p.name, t.state, t.attempts, t.started_at, t.finished_at,
			coalesce(t.last_error, ''), t.target
		FROM readpast_tasks t JOIN readpast_run_steps p ON p.run_id = t.run_id AND p.step_index = t.run_step
		WHERE t.run_id = $1 ORDER BY t.id`, id)
	if err != nil {
		return nil, wrap(err, "reading the steps of run %d", id)
	}
	run.Steps, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (queue.RunStep, error) {
		var (
			st                queue.RunStep
			idx, attempts     int32
			state             string
			started, finished *time.Time
		)
		err := r.Scan(&st.TaskID, &idx, &st.Step, &state, &attempts, &started, &finished, &st.LastError, &st.Target)
		st.Index, st.Attempts, st.State, st.StartedAt, st.FinishedAt = int(idx), int(attempts), queue.State(state), utc(started), utc(finished)
		return st, err
	})
	if err != nil {
		return nil, wrap(err, "reading the steps of run %d", id)
	}
	return run, nil
}

// Runs implements queue.Store.
func (s *Store) Runs(ctx context.Context, q queue.RunQuery) ([]queue.Run, error) {
	before := q.Before
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := s.pool.Query(ctx, `SELECT `+jobRunColumns+` FROM readpast_job_runs r
		WHERE r.job_id = (SELECT id FROM readpast_jobs WHERE name = $1) AND r.id < $2 ORDER BY r.id DESC LIMIT $3`,
		q.Job, before, q.Limit)
	if err != nil {
		return nil, wrap(err, "listing the runs of job %s", q.Job)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (queue.Run, error) {
		var d runDest
		if err := r.Scan(d.dest()...); err != nil {
			return queue.Run{}, err
		}
		return *d.run(), nil
	})
	return out, wrap(err, "listing the runs of job %s", q.Job)
}

// maxCancelTries bounds how often CancelRun reads a run again that moved to
// its next step between its read and its locks.
const maxCancelTries = 20

// CancelRun implements queue.Store. It locks the run's current task, then
// the run (the lock order of migration 000005: a step's end holds its task
// when its trigger locks the run), ends the run cancelled, then cancels the
// task through readpast_cancel, whose end of the step finds the run ended.
func (s *Store) CancelRun(ctx context.Context, id int64, actor string) (queue.RunState, error) {
	var out queue.RunState
	for range maxCancelTries {
		moved := false
		err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
			var taskID int64
			err := tx.QueryRow(ctx, `SELECT current_task_id FROM readpast_job_runs WHERE id = $1`, id).Scan(&taskID)
			if isNoRows(err) {
				return fmt.Errorf("run %d: %w", id, queue.ErrNotFound)
			}
			if err != nil {
				return err
			}
			// The current step's tasks, before the run (the lock order of a
			// step's end): its task, or every task of a fan-out (the run's
			// tasks of that step from current_task_id on, at most
			// queue.MaxFanOut by the index readpast_tasks_run), in id order.
			rows, err := tx.Query(ctx, `SELECT t.id FROM readpast_job_runs r JOIN readpast_tasks t ON t.run_id = r.id
					AND (t.id = r.current_task_id OR (r.fanout_left > 0 AND t.id > r.current_task_id AND t.run_step = r.current_step))
				WHERE r.id = $1 ORDER BY t.id FOR UPDATE OF t`, id)
			if err != nil {
				return err
			}
			tasks, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				return err
			}
			var current int64
			err = tx.QueryRow(ctx, `SELECT state, current_task_id FROM readpast_job_runs WHERE id = $1 FOR UPDATE`, id).Scan(&out, &current)
			if err != nil {
				return err
			}
			if out != queue.RunRunning {
				return fmt.Errorf("%w: run %d has ended (%s); only a running run can be cancelled", queue.ErrInvalidState, id, out)
			}
			if current != taskID {
				moved = true
				return nil
			}
			if _, err := tx.Exec(ctx, `UPDATE readpast_job_runs SET state = 'cancelled', finished_at = now(), reason = $2 WHERE id = $1`,
				id, queue.RunCancelledReason(actor)); err != nil {
				return err
			}
			out = queue.RunCancelled
			if _, err := tx.Exec(ctx, `SELECT readpast_cancel($1, $2)`, taskID, actor); err != nil {
				return err
			}
			for _, t := range tasks {
				if t == taskID {
					continue
				}
				if _, err := tx.Exec(ctx, `SELECT readpast_cancel(id, $2) FROM readpast_tasks WHERE id = $1 AND state IN ('pending', 'running')`,
					t, actor); err != nil {
					return err
				}
			}
			return audit(ctx, tx, actor, "cancel_run", fmt.Sprintf("run %d", id), fmt.Sprintf("task %d", taskID))
		})
		if errors.Is(err, queue.ErrNotFound) || errors.Is(err, queue.ErrInvalidState) {
			return out, err
		}
		if err != nil {
			return out, wrap(err, "cancelling run %d", id)
		}
		if !moved {
			return out, nil
		}
	}
	return out, fmt.Errorf("postgres: cancelling run %d: it moved to its next step %d times while being cancelled; try again", id, maxCancelTries)
}

// PurgeRuns implements queue.Store.
func (s *Store) PurgeRuns(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	return s.purge(ctx, "purging job runs", `DELETE FROM readpast_job_runs WHERE id IN (
		SELECT id FROM readpast_job_runs WHERE state <> 'running' AND finished_at < $1
		 ORDER BY finished_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, cutoff, batch)
}

// runTargets are the target names of each step of a run's plan, by index
// (space-separated; "" for a step that does not fan out).
func runTargets(plan []queue.PlanStep) []string {
	out := make([]string, len(plan))
	for i, s := range plan {
		out[i] = queue.JoinSelectors(s.Targets)
	}
	return out
}
