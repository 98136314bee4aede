package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"readpast/internal/queue"
)

// Schedules' definitions (docs/SCHEDULES.md).

// scheduleSelect reads a schedule with its latest run (one task, by id).
const scheduleSelect = `SELECT s.id, s.name, s.cron, s.time_zone, s.queue, s.body, s.priority, s.group_name,
	s.max_attempts, s.timeout_ms, s.transactional, s.paused, s.overlap, s.misfire, s.version, s.next_fire_at,
	s.last_fire_at, s.last_fire_outcome, s.last_fire_missed, s.last_task_id, t.state, t.finished_at,
	s.created_at, s.created_by, s.updated_at, s.updated_by, s.target, coalesce(s.job_name, ''), s.targets, s.fanout_limit
	FROM readpast_schedules s LEFT JOIN readpast_tasks t ON t.id = s.last_task_id`

func scanSchedule(r scanner) (*queue.Schedule, error) {
	var (
		x                                   queue.Schedule
		priority                            int
		group, outcome, lastState           sql.NullString
		timeoutMS                           int64
		next, lastFire, lastTask, lastEnded sql.NullInt64
		created, updated                    int64
		targets                             string
	)
	err := r.Scan(&x.ID, &x.Name, &x.Cron, &x.TimeZone, &x.Task.Queue, &x.Task.Body, &priority, &group,
		&x.Task.MaxAttempts, &timeoutMS, &x.Task.Transactional, &x.Paused, &x.Overlap, &x.Misfire, &x.Version, &next,
		&lastFire, &outcome, &x.LastFireMissed, &lastTask, &lastState, &lastEnded,
		&created, &x.CreatedBy, &updated, &x.UpdatedBy, &x.Task.Target, &x.Job, &targets, &x.Task.FanOutLimit)
	if err != nil {
		return nil, err
	}
	x.Task.Priority, x.Task.Group, x.Task.Timeout = &priority, group.String, time.Duration(timeoutMS)*time.Millisecond
	x.NextFireAt, x.LastFireAt, x.LastFireOutcome = nullMicros(next), nullMicros(lastFire), queue.FireOutcome(outcome.String)
	x.LastTaskID, x.LastTaskState, x.LastTaskFinishedAt = lastTask.Int64, queue.State(lastState.String), nullMicros(lastEnded)
	x.CreatedAt, x.UpdatedAt = fromMicros(created), fromMicros(updated)
	x.Task.Targets = queue.SplitSelectors(targets)
	return &x, nil
}

// defArgs binds a definition's columns in the order cron, time_zone, queue,
// body, priority, group_name, max_attempts, timeout_ms, transactional, paused,
// overlap, misfire, next_fire_at, target, targets, fanout_limit.
func defArgs(d queue.ScheduleDef, next time.Time) []any {
	return []any{d.Cron, d.TimeZone, d.Task.Queue, d.Task.Body, *d.Task.Priority, nullString(d.Task.Group),
		d.Task.MaxAttempts, d.Task.Timeout.Milliseconds(), boolInt(d.Task.Transactional), boolInt(d.Paused),
		string(d.Overlap), string(d.Misfire), nullTime(next), d.Task.Target, queue.JoinSelectors(d.Task.Targets), d.Task.FanOutLimit}
}

// nullTime is NULL for the zero time and microseconds otherwise.
func nullTime(t time.Time) sql.NullInt64 {
	return sql.NullInt64{Int64: micros(t), Valid: !t.IsZero()}
}

// CreateSchedule implements queue.Store.
func (s *Store) CreateSchedule(ctx context.Context, n queue.NewSchedule) error {
	return s.write(ctx, "creating schedule "+n.Def.Name, func(ctx context.Context, tx *sql.Tx, now int64) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO readpast_schedules (cron, time_zone, queue, body, priority, group_name,
			max_attempts, timeout_ms, transactional, paused, overlap, misfire, next_fire_at, target, targets, fanout_limit,
			name, created_at, created_by, updated_at, updated_by, job_name) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			append(defArgs(n.Def, n.NextFireAt), n.Def.Name, now, n.Actor, now, n.Actor, nullString(n.Def.Job))...)
		if isUniqueViolation(err) {
			return fmt.Errorf("a schedule named %s exists: %w", n.Def.Name, queue.ErrExists)
		}
		if err != nil {
			return err
		}
		return s.audit(tx, now, n.Actor, "create_schedule", "schedule "+n.Def.Name, n.Def.Describe())
	})
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

// ReplaceSchedule implements queue.Store.
func (s *Store) ReplaceSchedule(ctx context.Context, r queue.ScheduleReplace) (bool, error) {
	var ok bool
	err := s.write(ctx, "updating schedule "+r.Name, func(ctx context.Context, tx *sql.Tx, now int64) error {
		res, err := tx.ExecContext(ctx, `UPDATE readpast_schedules SET cron = ?, time_zone = ?, queue = ?, body = ?,
			priority = ?, group_name = ?, max_attempts = ?, timeout_ms = ?, transactional = ?, paused = ?, overlap = ?,
			misfire = ?, next_fire_at = ?, target = ?, targets = ?, fanout_limit = ?, version = version + 1, updated_at = ?, updated_by = ?
			WHERE id = ? AND version = ?`, append(defArgs(r.Def, r.NextFireAt), now, r.Actor, r.ID, r.Version)...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		ok = true
		return s.audit(tx, now, r.Actor, r.Action, "schedule "+r.Name, r.Detail)
	})
	return ok, err
}

// DeleteSchedule implements queue.Store.
func (s *Store) DeleteSchedule(ctx context.Context, name, actor string) error {
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
