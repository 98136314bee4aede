package sqlserver

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"readpast/internal/queue"
)

// Schedules' definitions (docs/SCHEDULES.md); the batches and their locks
// are in sql_schedules.go.

// scheduleDefArgs binds defParams.
func scheduleDefArgs(d queue.ScheduleDef, next time.Time) []any {
	return []any{
		sql.Named("cron", d.Cron),
		sql.Named("time_zone", d.TimeZone),
		sql.Named("queue", d.Task.Queue),
		sql.Named("body", maxText(d.Task.Body)),
		sql.Named("priority", int16(*d.Task.Priority)),
		sql.Named("group_name", nullString(d.Task.Group)),
		sql.Named("max_attempts", int32(d.Task.MaxAttempts)),
		sql.Named("timeout_ms", d.Task.Timeout.Milliseconds()),
		sql.Named("transactional", d.Task.Transactional),
		sql.Named("paused", d.Paused),
		sql.Named("overlap", varchar(string(d.Overlap))),
		sql.Named("misfire", varchar(string(d.Misfire))),
		sql.Named("next_fire_at", datetime2(next)),
		sql.Named("target", d.Task.Target),
		sql.Named("targets", queue.JoinSelectors(d.Task.Targets)),
		sql.Named("fanout_limit", int32(d.Task.FanOutLimit)),
	}
}

// createScheduleArgs binds createScheduleBatch.
func createScheduleArgs(n queue.NewSchedule) []any {
	return append(scheduleDefArgs(n.Def, n.NextFireAt), sql.Named("name", n.Def.Name), sql.Named("actor", n.Actor),
		sql.Named("detail", maxText(n.Def.Describe())), sql.Named("job_name", nullString(n.Def.Job)))
}

// CreateSchedule implements queue.Store.
func (s *Store) CreateSchedule(ctx context.Context, n queue.NewSchedule) error {
	err := retryDeadlock(ctx, func() error { return s.exec(ctx, createScheduleBatch.text, createScheduleArgs(n)...) })
	switch {
	case hasErrorNumber(err, errDuplicatePK):
		return fmt.Errorf("sqlserver: creating schedule %s: a schedule of that name exists: %w", n.Def.Name, queue.ErrExists)
	case err != nil:
		return wrap("creating schedule "+n.Def.Name, err)
	}
	return nil
}

// GetSchedule implements queue.Store.
func (s *Store) GetSchedule(ctx context.Context, name string) (*queue.Schedule, error) {
	out, err := s.schedules(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("sqlserver: schedule %s: %w", name, queue.ErrNotFound)
	}
	return &out[0], nil
}

// Schedules implements queue.Store.
func (s *Store) Schedules(ctx context.Context) ([]queue.Schedule, error) { return s.schedules(ctx, "") }

// schedules reads every schedule, or the one named.
func (s *Store) schedules(ctx context.Context, name string) ([]queue.Schedule, error) {
	out, err := queryAll(ctx, s.db, schedulesQuery.text, []any{sql.Named("name", nullString(name))}, scanSchedule)
	if err != nil {
		return nil, wrap("reading schedules", err)
	}
	return out, nil
}

func scanSchedule(r *sql.Rows) (queue.Schedule, error) {
	var (
		x                         queue.Schedule
		priority                  int16
		maxAttempts, missed       int32
		group, outcome, lastState sql.NullString
		overlap, misfire          string
		next, lastFire, lastEnded sql.NullTime
		lastTask                  sql.NullInt64
		timeoutMS                 int64
		targets                   string
		limit                     int32
	)
	err := r.Scan(&x.ID, &x.Name, &x.Cron, &x.TimeZone, &x.Task.Queue, &x.Task.Body, &priority, &group,
		&maxAttempts, &timeoutMS, &x.Task.Transactional, &x.Paused, &overlap, &misfire, &x.Version,
		&next, &lastFire, &outcome, &missed, &lastTask, &lastState, &lastEnded,
		&x.CreatedAt, &x.CreatedBy, &x.UpdatedAt, &x.UpdatedBy, &x.Task.Target, &x.Job, &targets, &limit)
	x.Task.Targets, x.Task.FanOutLimit = queue.SplitSelectors(targets), int(limit)
	p := int(priority)
	x.Task.Priority, x.Task.Group, x.Task.MaxAttempts = &p, group.String, int(maxAttempts)
	x.Task.Timeout = time.Duration(timeoutMS) * time.Millisecond
	x.Overlap, x.Misfire = queue.Overlap(overlap), queue.Misfire(misfire)
	x.NextFireAt, x.LastFireAt, x.LastFireOutcome, x.LastFireMissed = utc(next), utc(lastFire), queue.FireOutcome(outcome.String), int(missed)
	x.LastTaskID, x.LastTaskState, x.LastTaskFinishedAt = lastTask.Int64, queue.State(lastState.String), utc(lastEnded)
	x.CreatedAt, x.UpdatedAt = x.CreatedAt.UTC(), x.UpdatedAt.UTC()
	return x, err
}

// replaceScheduleArgs binds replaceScheduleBatch.
func replaceScheduleArgs(r queue.ScheduleReplace) []any {
	return append(scheduleDefArgs(r.Def, r.NextFireAt), sql.Named("id", r.ID), sql.Named("version", r.Version),
		sql.Named("name", r.Name), sql.Named("actor", r.Actor), sql.Named("action", r.Action),
		sql.Named("detail", maxText(r.Detail)))
}

// ReplaceSchedule implements queue.Store.
func (s *Store) ReplaceSchedule(ctx context.Context, r queue.ScheduleReplace) (bool, error) {
	var changed int
	err := retryDeadlock(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			return c.QueryRowContext(ctx, replaceScheduleBatch.text, replaceScheduleArgs(r)...).Scan(&changed)
		})
	})
	if err != nil {
		return false, wrap("updating schedule "+r.Name, err)
	}
	return changed == 1, nil
}

// DeleteSchedule implements queue.Store.
func (s *Store) DeleteSchedule(ctx context.Context, name, actor string) error {
	var deleted int
	err := retryDeadlock(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			return c.QueryRowContext(ctx, deleteScheduleBatch.text, sql.Named("name", name), sql.Named("actor", actor)).Scan(&deleted)
		})
	})
	switch {
	case err != nil:
		return wrap("deleting schedule "+name, err)
	case deleted == 0:
		return fmt.Errorf("sqlserver: deleting schedule %s: %w", name, queue.ErrNotFound)
	}
	return nil
}
