package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"readpast/internal/queue"
)

// Schedules' definitions (docs/SCHEDULES.md).

// scheduleSelect reads a schedule with its latest run: one task, looked up by
// its key for each schedule (LATERAL), never a join that could read the whole
// history.
const scheduleSelect = `SELECT s.id, s.name, s.cron, s.time_zone, s.queue, s.body, s.priority, s.group_name,
	s.max_attempts, s.timeout_ms, s.transactional, s.paused, s.overlap, s.misfire, s.version, s.next_fire_at,
	s.last_fire_at, s.last_fire_outcome, s.last_fire_missed, s.last_task_id, t.state, t.finished_at,
	s.created_at, s.created_by, s.updated_at, s.updated_by, s.target, coalesce(s.job_name, ''), s.targets, s.fanout_limit
	FROM readpast_schedules s
	LEFT JOIN LATERAL (SELECT state, finished_at FROM readpast_tasks WHERE id = s.last_task_id) t ON true`

func scanSchedule(row pgx.Row) (*queue.Schedule, error) {
	var (
		x                         queue.Schedule
		priority                  int
		group, outcome, lastState *string
		timeoutMS                 int64
		next, lastFire, lastEnded *time.Time
		lastTask                  *int64
		overlap, misfire          string
		createdAt, updatedAt      time.Time
		targets                   string
	)
	err := row.Scan(&x.ID, &x.Name, &x.Cron, &x.TimeZone, &x.Task.Queue, &x.Task.Body, &priority, &group,
		&x.Task.MaxAttempts, &timeoutMS, &x.Task.Transactional, &x.Paused, &overlap, &misfire, &x.Version, &next,
		&lastFire, &outcome, &x.LastFireMissed, &lastTask, &lastState, &lastEnded,
		&createdAt, &x.CreatedBy, &updatedAt, &x.UpdatedBy, &x.Task.Target, &x.Job, &targets, &x.Task.FanOutLimit)
	if err != nil {
		return nil, err
	}
	x.Task.Priority, x.Task.Group, x.Task.Timeout = &priority, str(group), time.Duration(timeoutMS)*time.Millisecond
	x.Overlap, x.Misfire = queue.Overlap(overlap), queue.Misfire(misfire)
	x.NextFireAt, x.LastFireAt, x.LastFireOutcome = utc(next), utc(lastFire), queue.FireOutcome(str(outcome))
	x.LastTaskState, x.LastTaskFinishedAt = queue.State(str(lastState)), utc(lastEnded)
	if lastTask != nil {
		x.LastTaskID = *lastTask
	}
	x.CreatedAt, x.UpdatedAt = createdAt.UTC(), updatedAt.UTC()
	x.Task.Targets = queue.SplitSelectors(targets)
	return &x, nil
}

// defArgs binds a definition's columns as $1 … $14: cron, time_zone, queue,
// body, priority, group_name, max_attempts, timeout_ms, transactional, paused,
// overlap, misfire, next_fire_at, target.
func defArgs(d queue.ScheduleDef, next time.Time) []any {
	var group *string
	if d.Task.Group != "" {
		group = &d.Task.Group
	}
	return []any{d.Cron, d.TimeZone, d.Task.Queue, d.Task.Body, int16(*d.Task.Priority), group, int32(d.Task.MaxAttempts),
		d.Task.Timeout.Milliseconds(), d.Task.Transactional, d.Paused, string(d.Overlap), string(d.Misfire), nullTime(next),
		d.Task.Target}
}

// fanOutArgs binds a definition's fan-out columns, after the statement's
// other parameters: targets, fanout_limit.
func fanOutArgs(d queue.ScheduleDef) []any {
	return []any{queue.JoinSelectors(d.Task.Targets), int32(d.Task.FanOutLimit)}
}

// CreateSchedule implements queue.Store: one statement inserts the schedule
// and its audit row.
func (s *Store) CreateSchedule(ctx context.Context, n queue.NewSchedule) error {
	err := s.exec(ctx, `WITH s AS (
			INSERT INTO readpast_schedules (cron, time_zone, queue, body, priority, group_name, max_attempts, timeout_ms,
				transactional, paused, overlap, misfire, next_fire_at, target, name, created_by, updated_by, job_name,
				targets, fanout_limit)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $16, nullif($18, ''), $19, $20)
			RETURNING name)
		INSERT INTO readpast_audit (actor, action, target, detail)
		SELECT $16, 'create_schedule', 'schedule ' || s.name, $17 FROM s`,
		append(append(defArgs(n.Def, n.NextFireAt), n.Def.Name, n.Actor, n.Def.Describe(), n.Def.Job), fanOutArgs(n.Def)...)...)
	switch {
	case isUniqueViolation(err):
		return fmt.Errorf("postgres: creating schedule %s: a schedule of that name exists: %w", n.Def.Name, queue.ErrExists)
	case err != nil:
		return wrap(err, "creating schedule %s", n.Def.Name)
	}
	return nil
}

// GetSchedule implements queue.Store.
func (s *Store) GetSchedule(ctx context.Context, name string) (*queue.Schedule, error) {
	x, err := scanSchedule(s.pool.QueryRow(ctx, scheduleSelect+` WHERE s.name = $1`, name))
	switch {
	case isNoRows(err):
		return nil, fmt.Errorf("postgres: schedule %s: %w", name, queue.ErrNotFound)
	case err != nil:
		return nil, wrap(err, "reading schedule %s", name)
	}
	return x, nil
}

// Schedules implements queue.Store.
func (s *Store) Schedules(ctx context.Context) ([]queue.Schedule, error) {
	rows, err := s.pool.Query(ctx, scheduleSelect+` ORDER BY s.name`)
	if err != nil {
		return nil, wrap(err, "listing schedules")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (queue.Schedule, error) {
		x, err := scanSchedule(r)
		if err != nil {
			return queue.Schedule{}, err
		}
		return *x, nil
	})
	return out, wrap(err, "listing schedules")
}

// ReplaceSchedule implements queue.Store: the update, only at the version
// read, and its audit row in one statement. It waits for a fire that holds
// the row, then finds the version gone and writes nothing.
func (s *Store) ReplaceSchedule(ctx context.Context, r queue.ScheduleReplace) (bool, error) {
	tag, err := s.execTag(ctx, `WITH s AS (
			UPDATE readpast_schedules SET cron = $1, time_zone = $2, queue = $3, body = $4, priority = $5,
				group_name = $6, max_attempts = $7, timeout_ms = $8, transactional = $9, paused = $10, overlap = $11,
				misfire = $12, next_fire_at = $13, target = $14, targets = $20, fanout_limit = $21, version = version + 1, updated_at = now(), updated_by = $15
			 WHERE id = $16 AND version = $17
			RETURNING name)
		INSERT INTO readpast_audit (actor, action, target, detail)
		SELECT $15, $18, 'schedule ' || s.name, $19 FROM s`,
		append(append(defArgs(r.Def, r.NextFireAt), r.Actor, r.ID, r.Version, r.Action, r.Detail), fanOutArgs(r.Def)...)...)
	if err != nil {
		return false, wrap(err, "updating schedule %s", r.Name)
	}
	return tag.RowsAffected() == 1, nil
}

// DeleteSchedule implements queue.Store.
func (s *Store) DeleteSchedule(ctx context.Context, name, actor string) error {
	tag, err := s.execTag(ctx, `WITH s AS (DELETE FROM readpast_schedules WHERE name = $1 RETURNING name)
		INSERT INTO readpast_audit (actor, action, target, detail)
		SELECT $2, 'delete_schedule', 'schedule ' || s.name, '' FROM s`, name, actor)
	switch {
	case err != nil:
		return wrap(err, "deleting schedule %s", name)
	case tag.RowsAffected() == 0:
		return fmt.Errorf("postgres: deleting schedule %s: %w", name, queue.ErrNotFound)
	}
	return nil
}
