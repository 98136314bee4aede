package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"readpast/internal/queue"
	"readpast/internal/schedule"
)

// Schedules (docs/SCHEDULES.md). SQLite's one writer makes every write
// transaction here run alone, so a fire's compare-and-set on the schedule's
// version needs no lock hint: the second scheduler with the same plan runs
// after the first commits and finds the version gone.

// scheduleSelect reads a schedule with its latest run (one task, by id).
const scheduleSelect = `SELECT s.id, s.name, s.cron, s.time_zone, s.queue, s.body, s.priority, s.group_name,
	s.max_attempts, s.timeout_ms, s.transactional, s.paused, s.overlap, s.misfire, s.version, s.next_fire_at,
	s.last_fire_at, s.last_fire_outcome, s.last_fire_missed, s.last_task_id, t.state, t.finished_at,
	s.created_at, s.created_by, s.updated_at, s.updated_by
	FROM readpast_schedules s LEFT JOIN readpast_tasks t ON t.id = s.last_task_id`

func scanSchedule(r scanner) (*queue.Schedule, error) {
	var (
		x                                   queue.Schedule
		priority                            int
		group, outcome, lastState           sql.NullString
		timeoutMS                           int64
		next, lastFire, lastTask, lastEnded sql.NullInt64
		created, updated                    int64
	)
	err := r.Scan(&x.ID, &x.Name, &x.Cron, &x.TimeZone, &x.Task.Queue, &x.Task.Body, &priority, &group,
		&x.Task.MaxAttempts, &timeoutMS, &x.Task.Transactional, &x.Paused, &x.Overlap, &x.Misfire, &x.Version, &next,
		&lastFire, &outcome, &x.LastFireMissed, &lastTask, &lastState, &lastEnded,
		&created, &x.CreatedBy, &updated, &x.UpdatedBy)
	if err != nil {
		return nil, err
	}
	x.Task.Priority, x.Task.Group, x.Task.Timeout = &priority, group.String, time.Duration(timeoutMS)*time.Millisecond
	x.NextFireAt, x.LastFireAt, x.LastFireOutcome = nullMicros(next), nullMicros(lastFire), queue.FireOutcome(outcome.String)
	x.LastTaskID, x.LastTaskState, x.LastTaskFinishedAt = lastTask.Int64, queue.State(lastState.String), nullMicros(lastEnded)
	x.CreatedAt, x.UpdatedAt = fromMicros(created), fromMicros(updated)
	return &x, nil
}

// defArgs binds a definition's columns in the order cron, time_zone, queue,
// body, priority, group_name, max_attempts, timeout_ms, transactional, paused,
// overlap, misfire, next_fire_at.
func defArgs(d queue.ScheduleDef, next time.Time) []any {
	return []any{d.Cron, d.TimeZone, d.Task.Queue, d.Task.Body, *d.Task.Priority, nullString(d.Task.Group),
		d.Task.MaxAttempts, d.Task.Timeout.Milliseconds(), boolInt(d.Task.Transactional), boolInt(d.Paused),
		string(d.Overlap), string(d.Misfire), nullTime(next)}
}

// nullTime is NULL for the zero time and microseconds otherwise.
func nullTime(t time.Time) sql.NullInt64 {
	return sql.NullInt64{Int64: micros(t), Valid: !t.IsZero()}
}

// CreateSchedule implements queue.Store.
func (s *Store) CreateSchedule(ctx context.Context, d queue.ScheduleDef, actor string) (*queue.Schedule, error) {
	if err := schedule.CheckActor(actor); err != nil {
		return nil, err
	}
	def, next, err := schedule.Prepare(d, s.opts.MaxBodyBytes, s.nowFor())
	if err != nil {
		return nil, err
	}
	err = s.write(ctx, "creating schedule "+def.Name, func(ctx context.Context, tx *sql.Tx, now int64) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO readpast_schedules (cron, time_zone, queue, body, priority, group_name,
			max_attempts, timeout_ms, transactional, paused, overlap, misfire, next_fire_at,
			name, created_at, created_by, updated_at, updated_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			append(defArgs(def, next), def.Name, now, actor, now, actor)...)
		if isUniqueViolation(err) {
			return fmt.Errorf("a schedule named %s exists: %w", def.Name, queue.ErrExists)
		}
		if err != nil {
			return err
		}
		return s.audit(tx, now, actor, "create_schedule", "schedule "+def.Name, def.Describe())
	})
	if err != nil {
		return nil, err
	}
	return s.GetSchedule(ctx, def.Name)
}

// GetSchedule implements queue.Store.
func (s *Store) GetSchedule(ctx context.Context, name string) (*queue.Schedule, error) {
	x, err := scanSchedule(s.r.QueryRowContext(ctx, scheduleSelect+` WHERE s.name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("schedule %s: %w", name, queue.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading schedule %s: %w", name, err)
	}
	return x, nil
}

// Schedules implements queue.Store.
func (s *Store) Schedules(ctx context.Context) ([]queue.Schedule, error) {
	rows, err := s.r.QueryContext(ctx, scheduleSelect+` ORDER BY s.name`)
	if err != nil {
		return nil, fmt.Errorf("listing schedules: %w", err)
	}
	defer rows.Close()
	var out []queue.Schedule
	for rows.Next() {
		x, err := scanSchedule(rows)
		if err != nil {
			return nil, fmt.Errorf("listing schedules: %w", err)
		}
		out = append(out, *x)
	}
	return out, rows.Err()
}

// UpdateSchedule implements queue.Store.
func (s *Store) UpdateSchedule(ctx context.Context, name string, u queue.ScheduleUpdate) (*queue.Schedule, error) {
	return schedule.Update(ctx, name, u, s.opts.MaxBodyBytes, s.nowFor, s.GetSchedule, s.replaceSchedule)
}

// replaceSchedule is UpdateSchedule's write (schedule.Replace).
func (s *Store) replaceSchedule(ctx context.Context, cur *queue.Schedule, def queue.ScheduleDef, next time.Time, u queue.ScheduleUpdate) (bool, error) {
	var ok bool
	err := s.write(ctx, "updating schedule "+cur.Name, func(ctx context.Context, tx *sql.Tx, now int64) error {
		res, err := tx.ExecContext(ctx, `UPDATE readpast_schedules SET cron = ?, time_zone = ?, queue = ?, body = ?,
			priority = ?, group_name = ?, max_attempts = ?, timeout_ms = ?, transactional = ?, paused = ?, overlap = ?,
			misfire = ?, next_fire_at = ?, version = version + 1, updated_at = ?, updated_by = ?
			WHERE id = ? AND version = ?`, append(defArgs(def, next), now, u.Actor, cur.ID, cur.Version)...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		ok = true
		return s.audit(tx, now, u.Actor, u.Action(), "schedule "+cur.Name, u.Describe())
	})
	return ok, err
}

// DeleteSchedule implements queue.Store.
func (s *Store) DeleteSchedule(ctx context.Context, name, actor string) error {
	if err := schedule.CheckActor(actor); err != nil {
		return err
	}
	return s.write(ctx, "deleting schedule "+name, func(ctx context.Context, tx *sql.Tx, now int64) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM readpast_schedules WHERE name = ?`, name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return queue.ErrNotFound
		}
		return s.audit(tx, now, actor, "delete_schedule", "schedule "+name, "")
	})
}

// run is a schedule whose run is being started: its template, read from the
// row the transaction changes or has read.
type run struct {
	id, lastTask int64
	name         string
	task         queue.ScheduleTask
}

// runColumns are the columns scanRun reads, before any extra ones.
const runColumns = `id, name, queue, body, priority, group_name, max_attempts, timeout_ms, transactional, last_task_id`

func scanRun(r scanner, extra ...any) (run, error) {
	var (
		x                  run
		priority           int
		group              sql.NullString
		timeoutMS          int64
		lastTask           sql.NullInt64
		maxAttempts, trans int
	)
	err := r.Scan(append([]any{&x.id, &x.name, &x.task.Queue, &x.task.Body, &priority, &group, &maxAttempts, &timeoutMS,
		&trans, &lastTask}, extra...)...)
	x.task.Priority, x.task.Group, x.task.MaxAttempts = &priority, group.String, maxAttempts
	x.task.Timeout, x.task.Transactional, x.lastTask = time.Duration(timeoutMS)*time.Millisecond, trans != 0, lastTask.Int64
	return x, err
}

// startRun enqueues the run's task in tx, marks it as the schedule's (of fire
// time fireAt; zero for a run now) and makes it the schedule's latest run.
func (s *Store) startRun(ctx context.Context, tx *sql.Tx, now int64, r run, createdBy string, fireAt time.Time) (int64, error) {
	t, err := r.task.NewTask(createdBy).Normalize(s.opts.MaxBodyBytes)
	if err != nil {
		return 0, fmt.Errorf("the task of schedule %s: %w", r.name, err)
	}
	res, err := enqueueTx(ctx, tx, now, []queue.NewTask{t})
	if err != nil {
		return 0, err
	}
	id := res[0].ID
	if _, err := tx.ExecContext(ctx, `UPDATE readpast_tasks SET schedule_name = ?, fire_at = ? WHERE id = ?`, r.name, nullTime(fireAt), id); err != nil {
		return 0, err
	}
	_, err = tx.ExecContext(ctx, `UPDATE readpast_schedules SET last_task_id = ? WHERE id = ?`, id, r.id)
	return id, err
}

// unfinishedLastRun is true when a schedule row s's latest run is pending or running.
const unfinishedLastRun = `EXISTS (SELECT 1 FROM readpast_tasks t WHERE t.id = s.last_task_id AND t.state IN ('pending', 'running'))`

// RunSchedule implements queue.Store.
func (s *Store) RunSchedule(ctx context.Context, name, actor string) (queue.Enqueued, error) {
	if err := schedule.CheckActor(actor); err != nil {
		return queue.Enqueued{}, err
	}
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
			out = queue.Enqueued{ID: r.lastTask, Duplicate: true}
			return nil
		}
		id, err := s.startRun(ctx, tx, now, r, actor, time.Time{})
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
	if err := queue.CheckDueLimit(limit); err != nil {
		return queue.DueSchedules{}, err
	}
	if at.IsZero() {
		at = s.nowFor()
	}
	out := queue.DueSchedules{Now: at.UTC()}
	rows, err := s.r.QueryContext(ctx, `SELECT id, name, cron, time_zone, misfire, version, next_fire_at, last_fire_at
		FROM readpast_schedules WHERE next_fire_at <= ? ORDER BY next_fire_at LIMIT ?`, micros(at), limit)
	if err != nil {
		return out, fmt.Errorf("reading due schedules: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var d queue.DueSchedule
		var next int64
		var last sql.NullInt64
		if err := rows.Scan(&d.ID, &d.Name, &d.Cron, &d.TimeZone, &d.Misfire, &d.Version, &next, &last); err != nil {
			return out, fmt.Errorf("reading due schedules: %w", err)
		}
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
		out = queue.Fired{Won: true, Outcome: outcome}
		switch outcome {
		case queue.FireEnqueued:
			out.Queue = r.task.Queue
			out.TaskID, err = s.startRun(ctx, tx, now, r, queue.ScheduleCreatedBy(r.name), f.FireAt)
		case queue.FireSkippedOverlap:
			out.TaskID = r.lastTask
		}
		return err
	})
	if err != nil {
		return queue.Fired{}, err
	}
	return out, nil
}
