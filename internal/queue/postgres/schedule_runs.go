package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"readpast/internal/queue"
)

// Runs of schedules: Run now, the due schedules, and fires. A fire is one
// transaction on one connection: the compare-and-set of the schedule row, then
// readpast_enqueue and the link of the task to the schedule. The schedule row
// is locked first (the schema baseline's lock order), and a firer never waits for
// another: it skips a row another transaction holds (SKIP LOCKED) and leaves
// that fire to it.

// runColumns are the columns of a schedule row s that scanRun reads, before
// any extra ones.
const runColumns = `s.id, s.name, s.queue, s.body, s.priority, s.group_name, s.max_attempts, s.timeout_ms,
	s.transactional, coalesce(s.last_task_id, 0), s.target, coalesce(s.job_name, ''), s.targets, s.fanout_limit`

// scanRun reads a schedule row's runColumns, then the extra destinations.
func scanRun(row pgx.Row, extra ...any) (queue.ScheduleRun, error) {
	var (
		x         queue.ScheduleRun
		priority  int
		group     *string
		timeoutMS int64
		targets   string
	)
	err := row.Scan(append([]any{&x.ID, &x.Name, &x.Task.Queue, &x.Task.Body, &priority, &group, &x.Task.MaxAttempts,
		&timeoutMS, &x.Task.Transactional, &x.LastTaskID, &x.Task.Target, &x.Job, &targets, &x.Task.FanOutLimit}, extra...)...)
	x.Task.Targets = queue.SplitSelectors(targets)
	x.Task.Priority, x.Task.Group, x.Task.Timeout = &priority, str(group), time.Duration(timeoutMS)*time.Millisecond
	return x, err
}

// unfinishedLastRun is true when schedule row s's latest run is pending or
// running: a read of one task by its id, locking nothing.
// A job's schedule's latest run is its job's: a Run now counts too. A
// fan-out's run is every task of its group (at most queue.MaxFanOut rows of
// readpast_tasks_group_state).
const unfinishedLastRun = `(EXISTS (SELECT 1 FROM readpast_tasks t WHERE t.id = s.last_task_id AND t.state IN ('pending', 'running'))
	OR (s.targets <> '' AND EXISTS (SELECT 1 FROM readpast_tasks l JOIN readpast_tasks t ON t.group_name = l.group_name
	           WHERE l.id = s.last_task_id AND t.state IN ('pending', 'running')))
	OR EXISTS (SELECT 1 FROM readpast_jobs j JOIN readpast_job_runs r ON r.id = j.last_run_id
	           WHERE j.name = s.job_name AND r.state = 'running'))`

// startRun enqueues the run's task in tx through readpast_enqueue (the
// production enqueue, its NOTIFY included), marks it as the schedule's (of
// fire time fireAt; zero for a run now) and makes it the latest run. A
// schedule that fans out enqueues fan's tasks instead, in fan's group made
// with its limit; its first task stands for the run (unfinishedLastRun reads
// the whole group).
func (s *Store) startRun(ctx context.Context, tx pgx.Tx, r queue.ScheduleRun, createdBy string, fireAt time.Time, fan *queue.FanOutFire) (int64, error) {
	var id int64
	if len(r.Task.Targets) > 0 && r.Job == "" {
		tasks, err := r.FanOutTasks(createdBy, s.opts.MaxBodyBytes, fan)
		if err != nil {
			return 0, err
		}
		// The group is new (queue.NewFanOutGroup). Like the fire, it is not
		// audited: its tasks say who made them (created_by).
		if _, err := tx.Exec(ctx, `INSERT INTO readpast_groups (name, max_running, updated_by) VALUES ($1, $2, $3)`,
			fan.Group, fan.Limit, createdBy); err != nil {
			return 0, err
		}
		rows, err := tx.Query(ctx, enqueueSQL, enqueueArgs(tasks)...)
		if err != nil {
			return 0, err
		}
		ids, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (int64, error) {
			var id int64
			var dup bool
			return id, r.Scan(&id, &dup)
		})
		if err != nil {
			return 0, err
		}
		_, err = tx.Exec(ctx, `WITH t AS (UPDATE readpast_tasks SET schedule_name = $2, fire_at = $3 WHERE id = ANY($1))
			UPDATE readpast_schedules SET last_task_id = $1[1] WHERE id = $4`, ids, r.Name, nullTime(fireAt), r.ID)
		return ids[0], err
	}
	if r.Job != "" {
		// A job's schedule: a run of the job, its first step the run's task.
		run, err := startRunTx(ctx, tx, r.StartRun(createdBy, fan))
		if err != nil || run.Duplicate {
			return run.TaskID, err
		}
		id = run.TaskID
	} else {
		t, err := r.NewTask(createdBy, s.opts.MaxBodyBytes)
		if err != nil {
			return 0, err
		}
		var dup bool
		if err := tx.QueryRow(ctx, enqueueSQL, enqueueArgs([]queue.NewTask{t})...).Scan(&id, &dup); err != nil {
			return 0, err
		}
	}
	_, err := tx.Exec(ctx, `WITH t AS (UPDATE readpast_tasks SET schedule_name = $2, fire_at = $3 WHERE id = $1)
		UPDATE readpast_schedules SET last_task_id = $1 WHERE id = $4`, id, r.Name, nullTime(fireAt), r.ID)
	return id, err
}

// inTx runs fn in one transaction on a connection of its own (write's
// rules: sent work runs to its end), committing when fn returns nil.
func (s *Store) inTx(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	return s.write(ctx, func(ctx context.Context, c conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error { return fn(ctx, tx) })
	})
}

// RunSchedule implements queue.Store. It waits for a fire or change that
// holds the schedule's row (an operator's action, not a firer's race).
func (s *Store) RunSchedule(ctx context.Context, name, actor string, fan *queue.FanOutFire) (queue.Enqueued, error) {
	var out queue.Enqueued
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var skip bool
		r, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+`, s.overlap = 'skip' AND `+unfinishedLastRun+`
			FROM readpast_schedules s WHERE s.name = $1 FOR UPDATE`, name), &skip)
		switch {
		case isNoRows(err):
			return queue.ErrNotFound
		case err != nil:
			return err
		case skip:
			out = queue.Enqueued{ID: r.LastTaskID, Duplicate: true}
			return nil
		}
		id, err := s.startRun(ctx, tx, r, actor, time.Time{}, fan)
		if err != nil {
			return err
		}
		out = queue.Enqueued{ID: id}
		_, err = tx.Exec(ctx, `INSERT INTO readpast_audit (actor, action, target, detail)
			VALUES ($1, 'run_schedule', 'schedule ' || $2, $3)`, actor, name, fmt.Sprintf("task %d", id))
		return err
	})
	if err != nil {
		return queue.Enqueued{}, wrap(err, "running schedule %s", name)
	}
	return out, nil
}

// DueSchedules implements queue.Store: the due schedules by the index on
// next_fire_at, and the soonest one after, in one statement; at zero is the
// database's now().
func (s *Store) DueSchedules(ctx context.Context, at time.Time, limit int) (queue.DueSchedules, error) {
	rows, err := s.pool.Query(ctx, `SELECT n.now, n.next, d.id, d.name, d.cron, d.time_zone, d.misfire, d.version,
			d.next_fire_at, d.last_fire_at, d.targets, d.fanout_limit, coalesce(d.job_name, '')
		FROM (SELECT x.now, (SELECT min(next_fire_at) FROM readpast_schedules WHERE next_fire_at > x.now) AS next
		        FROM (SELECT coalesce($1::timestamptz, now()) AS now) x) n
		LEFT JOIN LATERAL (
			SELECT * FROM readpast_schedules WHERE next_fire_at <= n.now ORDER BY next_fire_at LIMIT $2) d ON true
		ORDER BY d.next_fire_at`, nullTime(at), limit)
	if err != nil {
		return queue.DueSchedules{}, wrap(err, "reading due schedules")
	}
	defer rows.Close()
	var out queue.DueSchedules
	for rows.Next() {
		var (
			next, due, last           *time.Time
			id, version               *int64
			name, cron, zone, misfire *string
			targets                   *string
			limit                     *int32
			job                       *string
		)
		if err := rows.Scan(&out.Now, &next, &id, &name, &cron, &zone, &misfire, &version, &due, &last, &targets, &limit, &job); err != nil {
			return queue.DueSchedules{}, wrap(err, "reading due schedules")
		}
		out.Now, out.Next = out.Now.UTC(), utc(next)
		if id != nil {
			out.Due = append(out.Due, queue.DueSchedule{ID: *id, Name: *name, Cron: *cron, TimeZone: *zone,
				Misfire: queue.Misfire(*misfire), Version: *version, NextFireAt: utc(due), LastFireAt: utc(last),
				Targets: queue.SplitSelectors(*targets), FanOutLimit: int(*limit), Job: *job})
		}
	}
	return out, wrap(rows.Err(), "reading due schedules")
}

// FireSchedule implements queue.Store. The first statement locks the schedule
// row at the version planned, skipping it if another transaction holds it,
// moves it to the next fire time and decides the outcome from the policies
// and the latest run; RETURNING gives the template of the task.
func (s *Store) FireSchedule(ctx context.Context, f queue.ScheduleFire) (queue.Fired, error) {
	var out queue.Fired
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var outcome string
		r, err := scanRun(tx.QueryRow(ctx, `UPDATE readpast_schedules s SET version = s.version + 1,
				next_fire_at = $3, last_fire_at = $4, last_fire_missed = $5,
				last_fire_outcome = CASE WHEN $6 THEN 'skipped_misfire'
				                         WHEN s.overlap = 'skip' AND `+unfinishedLastRun+` THEN 'skipped_overlap'
				                         ELSE 'enqueued' END
			  FROM (SELECT id FROM readpast_schedules
			         WHERE id = $1 AND version = $2 AND NOT paused AND (last_fire_at IS NULL OR last_fire_at < $4)
			           FOR UPDATE SKIP LOCKED) l
			 WHERE s.id = l.id
			RETURNING `+runColumns+`, s.last_fire_outcome`,
			f.ID, f.Version, nullTime(f.Next), f.FireAt, int32(f.Missed), f.SkipMissed), &outcome)
		switch {
		case isNoRows(err):
			return nil // fired by another scheduler, held by one now, or changed since it was read
		case err != nil:
			return err
		}
		out, err = r.Fired(queue.FireOutcome(outcome), func(by string) (int64, error) { return s.startRun(ctx, tx, r, by, f.FireAt, f.FanOut) })
		return err
	})
	if err != nil {
		return queue.Fired{}, wrap(err, "firing schedule %s", f.Name)
	}
	return out, nil
}
