package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"readpast/internal/queue"
)

// Runs of schedules: Run now, the due schedules, and fires. SQLite's one
// writer makes every write transaction here run alone, so a fire's
// compare-and-set on the schedule's version needs no lock hint: the second
// scheduler with the same plan runs after the first commits and finds the
// version gone.

// runColumns are the columns scanRun reads, before any extra ones.
const runColumns = `id, name, queue, body, priority, group_name, max_attempts, timeout_ms, transactional, last_task_id, target, job_name,
	targets, fanout_limit`

// scanRun reads a schedule row's runColumns, then the extra destinations.
func scanRun(r scanner, extra ...any) (queue.ScheduleRun, error) {
	var (
		x                  queue.ScheduleRun
		priority           int
		group, job         sql.NullString
		timeoutMS          int64
		lastTask           sql.NullInt64
		maxAttempts, trans int
		targets            string
	)
	err := r.Scan(append([]any{&x.ID, &x.Name, &x.Task.Queue, &x.Task.Body, &priority, &group, &maxAttempts, &timeoutMS,
		&trans, &lastTask, &x.Task.Target, &job, &targets, &x.Task.FanOutLimit}, extra...)...)
	x.Task.Targets = queue.SplitSelectors(targets)
	x.Job = job.String
	x.Task.Priority, x.Task.Group, x.Task.MaxAttempts = &priority, group.String, maxAttempts
	x.Task.Timeout, x.Task.Transactional, x.LastTaskID = time.Duration(timeoutMS)*time.Millisecond, trans != 0, lastTask.Int64
	return x, err
}

// startRun enqueues the run's task in tx, marks it as the schedule's (of fire
// time fireAt; zero for a run now) and makes it the schedule's latest run. A
// schedule that fans out enqueues fan's tasks instead, in fan's group made
// with its limit; its first task stands for the run (unfinishedLastRun reads
// the whole group).
func (s *Store) startRun(ctx context.Context, tx *sql.Tx, now int64, r queue.ScheduleRun, createdBy string, fireAt time.Time, fan *queue.FanOutFire) (int64, error) {
	var id int64
	if len(r.Task.Targets) > 0 && r.Job == "" {
		tasks, err := r.FanOutTasks(createdBy, s.opts.MaxBodyBytes, fan)
		if err != nil {
			return 0, err
		}
		// The group is new (queue.NewFanOutGroup). Like the fire, it is not
		// audited: its tasks say who made them (created_by).
		if _, err := tx.ExecContext(ctx, `INSERT INTO readpast_groups (name, max_running, updated_at, updated_by) VALUES (?, ?, ?, ?)`,
			fan.Group, fan.Limit, now, createdBy); err != nil {
			return 0, err
		}
		res, err := enqueueTx(ctx, tx, now, tasks)
		if err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE readpast_tasks SET schedule_name = ?, fire_at = ? WHERE group_name = ?`,
			r.Name, nullTime(fireAt), fan.Group); err != nil {
			return 0, err
		}
		_, err = tx.ExecContext(ctx, `UPDATE readpast_schedules SET last_task_id = ? WHERE id = ?`, res[0].ID, r.ID)
		return res[0].ID, err
	}
	if r.Job != "" {
		// A job's schedule: a run of the job, its first step the run's task.
		run, err := startRunTx(ctx, tx, now, r.StartRun(createdBy, fan))
		if err != nil || run.Duplicate {
			return run.TaskID, err
		}
		id = run.TaskID
	} else {
		t, err := r.NewTask(createdBy, s.opts.MaxBodyBytes)
		if err != nil {
			return 0, err
		}
		res, err := enqueueTx(ctx, tx, now, []queue.NewTask{t})
		if err != nil {
			return 0, err
		}
		id = res[0].ID
	}
	if _, err := tx.ExecContext(ctx, `UPDATE readpast_tasks SET schedule_name = ?, fire_at = ? WHERE id = ?`, r.Name, nullTime(fireAt), id); err != nil {
		return 0, err
	}
	_, err := tx.ExecContext(ctx, `UPDATE readpast_schedules SET last_task_id = ? WHERE id = ?`, id, r.ID)
	return id, err
}

// unfinishedLastRun is true when a schedule row s's latest run is pending or running.
// A job's schedule's latest run is its job's: a Run now counts too. A
// fan-out's run is every task of its group (at most queue.MaxFanOut rows of
// the group's index).
const unfinishedLastRun = `(EXISTS (SELECT 1 FROM readpast_tasks t WHERE t.id = s.last_task_id AND t.state IN ('pending', 'running'))
	OR (s.targets <> '' AND EXISTS (SELECT 1 FROM readpast_tasks l JOIN readpast_tasks t ON t.group_name = l.group_name
	           WHERE l.id = s.last_task_id AND t.state IN ('pending', 'running')))
	OR EXISTS (SELECT 1 FROM readpast_jobs j JOIN readpast_job_runs r ON r.id = j.last_run_id
	           WHERE j.name = s.job_name AND r.state = 'running'))`

// RunSchedule implements queue.Store.
func (s *Store) RunSchedule(ctx context.Context, name, actor string, fan *queue.FanOutFire) (queue.Enqueued, error) {
	var out queue.Enqueued
	err := s.write(ctx, "running schedule "+name, func(ctx context.Context, tx *sql.Tx, now int64) error {
		var skip bool
		r, err := scanRun(tx.QueryRowContext(ctx, `SELECT `+runColumns+`, s.overlap = 'skip' AND `+unfinishedLastRun+`
			FROM readpast_schedules s WHERE s.name = ?`, name), &skip)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return queue.ErrNotFound
		case err != nil:
			return err
		case skip:
			out = queue.Enqueued{ID: r.LastTaskID, Duplicate: true}
			return nil
		}
		id, err := s.startRun(ctx, tx, now, r, actor, time.Time{}, fan)
		if err != nil {
			return err
		}
		out = queue.Enqueued{ID: id}
		return s.audit(tx, now, actor, "run_schedule", "schedule "+name, fmt.Sprintf("task %d", id))
	})
	return out, err
}

// DueSchedules implements queue.Store: SQLite's clock is this process's.
func (s *Store) DueSchedules(ctx context.Context, at time.Time, limit int) (queue.DueSchedules, error) {
	if at.IsZero() {
		at = s.nowFor()
	}
	out := queue.DueSchedules{Now: at.UTC()}
	rows, err := s.r.QueryContext(ctx, `SELECT id, name, cron, time_zone, misfire, version, next_fire_at, last_fire_at,
		targets, fanout_limit, coalesce(job_name, '') FROM readpast_schedules WHERE next_fire_at <= ? ORDER BY next_fire_at LIMIT ?`, micros(at), limit)
	if err != nil {
		return out, fmt.Errorf("reading due schedules: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var d queue.DueSchedule
		var next int64
		var last sql.NullInt64
		var targets string
		if err := rows.Scan(&d.ID, &d.Name, &d.Cron, &d.TimeZone, &d.Misfire, &d.Version, &next, &last, &targets, &d.FanOutLimit, &d.Job); err != nil {
			return out, fmt.Errorf("reading due schedules: %w", err)
		}
		d.Targets = queue.SplitSelectors(targets)
		d.NextFireAt, d.LastFireAt = fromMicros(next), nullMicros(last)
		out.Due = append(out.Due, d)
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("reading due schedules: %w", err)
	}
	var next sql.NullInt64
	if err := s.r.QueryRowContext(ctx, `SELECT min(next_fire_at) FROM readpast_schedules WHERE next_fire_at > ?`, micros(at)).Scan(&next); err != nil {
		return out, fmt.Errorf("reading the next fire time: %w", err)
	}
	out.Next = nullMicros(next)
	return out, nil
}

// FireSchedule implements queue.Store. One UPDATE moves the schedule from the
// version planned to the next fire time and decides the outcome from the
// policies and the latest run; RETURNING gives the template of the task.
func (s *Store) FireSchedule(ctx context.Context, f queue.ScheduleFire) (queue.Fired, error) {
	var out queue.Fired
	err := s.write(ctx, "firing schedule "+f.Name, func(ctx context.Context, tx *sql.Tx, now int64) error {
		var outcome queue.FireOutcome
		r, err := scanRun(tx.QueryRowContext(ctx, `UPDATE readpast_schedules AS s SET version = version + 1,
			next_fire_at = ?1, last_fire_at = ?2, last_fire_missed = ?3,
			last_fire_outcome = CASE WHEN ?4 THEN 'skipped_misfire'
			                         WHEN overlap = 'skip' AND `+unfinishedLastRun+` THEN 'skipped_overlap'
			                         ELSE 'enqueued' END
			WHERE id = ?5 AND version = ?6 AND paused = 0 AND (last_fire_at IS NULL OR last_fire_at < ?2)
			RETURNING `+runColumns+`, last_fire_outcome`,
			nullTime(f.Next), micros(f.FireAt), f.Missed, boolInt(f.SkipMissed), f.ID, f.Version), &outcome)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil // fired by another scheduler, or changed since it was read
		case err != nil:
			return err
		}
		out, err = r.Fired(outcome, func(by string) (int64, error) { return s.startRun(ctx, tx, now, r, by, f.FireAt, f.FanOut) })
		return err
	})
	if err != nil {
		return queue.Fired{}, err
	}
	return out, nil
}
