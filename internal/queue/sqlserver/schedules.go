package sqlserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/golang-sql/civil"
	mssql "github.com/microsoft/go-mssqldb"

	"readpast/internal/queue"
	"readpast/internal/schedule"
)

// Schedules (docs/SCHEDULES.md); the batches and their locks are in
// sql_schedules.go. A fire or a Run now is one transaction on one session:
// BEGIN TRAN, the schedule's batch, the production enqueue batch (its own
// BEGIN and COMMIT only nest, as in Hold), the link of the task to the
// schedule, COMMIT. On any error write rolls the session back.

// errUniqueConstraint is "Violation of UNIQUE KEY constraint": a taken name.
const errUniqueConstraint = 2627

const (
	beginTranXact = "SET XACT_ABORT ON;\nBEGIN TRAN;"
	commitTran    = "COMMIT TRAN;"
)

// typedTime binds a nullable datetime2 in UTC: NULL for the zero time, still
// typed (an untyped nil would reach the server as a NULL of no type).
func typedTime(t time.Time) mssql.NullDateTime {
	return mssql.NullDateTime{DateTime: civil.DateTimeOf(t.UTC()), Valid: !t.IsZero()}
}

// typedString binds a nullable nvarchar: NULL for "".
func typedString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// scheduleDefArgs binds defParams.
func scheduleDefArgs(d queue.ScheduleDef, next time.Time) []any {
	return []any{
		sql.Named("cron", d.Cron),
		sql.Named("time_zone", d.TimeZone),
		sql.Named("queue", d.Task.Queue),
		sql.Named("body", maxText(d.Task.Body)),
		sql.Named("priority", int16(*d.Task.Priority)),
		sql.Named("group_name", typedString(d.Task.Group)),
		sql.Named("max_attempts", int32(d.Task.MaxAttempts)),
		sql.Named("timeout_ms", d.Task.Timeout.Milliseconds()),
		sql.Named("transactional", d.Task.Transactional),
		sql.Named("paused", d.Paused),
		sql.Named("overlap", varchar(string(d.Overlap))),
		sql.Named("misfire", varchar(string(d.Misfire))),
		sql.Named("next_fire_at", typedTime(next)),
	}
}

// createScheduleArgs binds createScheduleBatch.
func createScheduleArgs(d queue.ScheduleDef, next time.Time, actor string) []any {
	return append(scheduleDefArgs(d, next), sql.Named("name", d.Name), sql.Named("actor", actor),
		sql.Named("detail", maxText(d.Describe())))
}

// CreateSchedule implements queue.Store.
func (s *Store) CreateSchedule(ctx context.Context, d queue.ScheduleDef, actor string) (*queue.Schedule, error) {
	if err := schedule.CheckActor(actor); err != nil {
		return nil, err
	}
	def, next, err := schedule.Prepare(d, s.opts.MaxBodyBytes, time.Now())
	if err != nil {
		return nil, err
	}
	err = retryDeadlock(ctx, func() error { return s.exec(ctx, createScheduleBatch.text, createScheduleArgs(def, next, actor)...) })
	switch {
	case hasErrorNumber(err, errUniqueConstraint):
		return nil, fmt.Errorf("sqlserver: creating schedule %s: a schedule of that name exists: %w", def.Name, queue.ErrExists)
	case err != nil:
		return nil, wrap("creating schedule "+def.Name, err)
	}
	return s.GetSchedule(ctx, def.Name)
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
	out, err := queryAll(ctx, s.db, schedulesQuery.text, []any{sql.Named("name", typedString(name))}, scanSchedule)
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
	)
	err := r.Scan(&x.ID, &x.Name, &x.Cron, &x.TimeZone, &x.Task.Queue, &x.Task.Body, &priority, &group,
		&maxAttempts, &timeoutMS, &x.Task.Transactional, &x.Paused, &overlap, &misfire, &x.Version,
		&next, &lastFire, &outcome, &missed, &lastTask, &lastState, &lastEnded,
		&x.CreatedAt, &x.CreatedBy, &x.UpdatedAt, &x.UpdatedBy)
	p := int(priority)
	x.Task.Priority, x.Task.Group, x.Task.MaxAttempts = &p, group.String, int(maxAttempts)
	x.Task.Timeout = time.Duration(timeoutMS) * time.Millisecond
	x.Overlap, x.Misfire = queue.Overlap(overlap), queue.Misfire(misfire)
	x.NextFireAt, x.LastFireAt, x.LastFireOutcome, x.LastFireMissed = utc(next), utc(lastFire), queue.FireOutcome(outcome.String), int(missed)
	x.LastTaskID, x.LastTaskState, x.LastTaskFinishedAt = lastTask.Int64, queue.State(lastState.String), utc(lastEnded)
	x.CreatedAt, x.UpdatedAt = x.CreatedAt.UTC(), x.UpdatedAt.UTC()
	return x, err
}

// UpdateSchedule implements queue.Store.
func (s *Store) UpdateSchedule(ctx context.Context, name string, u queue.ScheduleUpdate) (*queue.Schedule, error) {
	return schedule.Update(ctx, name, u, s.opts.MaxBodyBytes, time.Now, s.GetSchedule, s.replaceSchedule)
}

// replaceScheduleArgs binds replaceScheduleBatch.
func replaceScheduleArgs(cur *queue.Schedule, def queue.ScheduleDef, next time.Time, u queue.ScheduleUpdate) []any {
	return append(scheduleDefArgs(def, next), sql.Named("id", cur.ID), sql.Named("version", cur.Version),
		sql.Named("name", cur.Name), sql.Named("actor", u.Actor), sql.Named("action", u.Action()),
		sql.Named("detail", maxText(u.Describe())))
}

// replaceSchedule is UpdateSchedule's write (schedule.Replace).
func (s *Store) replaceSchedule(ctx context.Context, cur *queue.Schedule, def queue.ScheduleDef, next time.Time, u queue.ScheduleUpdate) (bool, error) {
	var changed int
	err := retryDeadlock(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			return c.QueryRowContext(ctx, replaceScheduleBatch.text, replaceScheduleArgs(cur, def, next, u)...).Scan(&changed)
		})
	})
	if err != nil {
		return false, wrap("updating schedule "+cur.Name, err)
	}
	return changed == 1, nil
}

// DeleteSchedule implements queue.Store.
func (s *Store) DeleteSchedule(ctx context.Context, name, actor string) error {
	if err := schedule.CheckActor(actor); err != nil {
		return err
	}
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

// run is a schedule whose run is being started: its template, read from the
// row the transaction locked.
type run struct {
	id, lastTask int64
	name         string
	task         queue.ScheduleTask
}

func scanRun(r *sql.Row, extra ...any) (run, error) {
	var (
		x           run
		priority    int16
		maxAttempts int32
		group       sql.NullString
		timeoutMS   int64
	)
	err := r.Scan(append([]any{&x.id, &x.name, &x.task.Queue, &x.task.Body, &priority, &group, &maxAttempts, &timeoutMS,
		&x.task.Transactional, &x.lastTask}, extra...)...)
	p := int(priority)
	x.task.Priority, x.task.Group, x.task.MaxAttempts = &p, group.String, int(maxAttempts)
	x.task.Timeout = time.Duration(timeoutMS) * time.Millisecond
	return x, err
}

// startRun enqueues the run's task with the production enqueue batch inside
// the session's open transaction, marks it as the schedule's (of fire time
// fireAt; zero for a Run now) and makes it the latest run.
func (s *Store) startRun(ctx context.Context, c *sql.Conn, r run, createdBy string, fireAt time.Time) (int64, error) {
	t, err := r.task.NewTask(createdBy).Normalize(s.opts.MaxBodyBytes)
	if err != nil {
		return 0, fmt.Errorf("the task of schedule %s: %w", r.name, err)
	}
	args, err := enqueueArgs([]queue.NewTask{t})
	if err != nil {
		return 0, fmt.Errorf("the task of schedule %s: %w", r.name, err)
	}
	var id int64
	if err := c.QueryRowContext(ctx, enqueueBatch.text, args...).Scan(&id); err != nil {
		return 0, err
	}
	_, err = c.ExecContext(ctx, linkRunBatch.text, linkRunArgs(r, id, fireAt)...)
	return id, err
}

// linkRunArgs binds linkRunBatch.
func linkRunArgs(r run, taskID int64, fireAt time.Time) []any {
	return []any{sql.Named("id", r.id), sql.Named("name", r.name), sql.Named("task_id", taskID), sql.Named("fire_at", typedTime(fireAt))}
}

// RunSchedule implements queue.Store.
func (s *Store) RunSchedule(ctx context.Context, name, actor string) (queue.Enqueued, error) {
	if err := schedule.CheckActor(actor); err != nil {
		return queue.Enqueued{}, err
	}
	var out queue.Enqueued
	err := retryDeadlock(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			if _, err := c.ExecContext(ctx, beginTranXact); err != nil {
				return err
			}
			var skip bool
			r, err := scanRun(c.QueryRowContext(ctx, runLockQuery.text, sql.Named("name", name)), &skip)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				return queue.ErrNotFound
			case err != nil:
				return err
			case skip:
				out = queue.Enqueued{ID: r.lastTask, Duplicate: true}
			default:
				id, err := s.startRun(ctx, c, r, actor, time.Time{})
				if err != nil {
					return err
				}
				out = queue.Enqueued{ID: id}
				if _, err := c.ExecContext(ctx, runAuditBatch.text, runAuditArgs(actor, name, id)...); err != nil {
					return err
				}
			}
			_, err = c.ExecContext(ctx, commitTran)
			return err
		})
	})
	if err != nil {
		return queue.Enqueued{}, wrap("running schedule "+name, err)
	}
	return out, nil
}

// runAuditArgs binds runAuditBatch.
func runAuditArgs(actor, name string, taskID int64) []any {
	return []any{sql.Named("actor", actor), sql.Named("name", name), sql.Named("task_id", taskID)}
}

// dueArgs binds dueSchedulesQuery.
func dueArgs(at time.Time, limit int) []any {
	return []any{sql.Named("at", typedTime(at)), sql.Named("limit", int32(limit))}
}

// DueSchedules implements queue.Store.
func (s *Store) DueSchedules(ctx context.Context, at time.Time, limit int) (queue.DueSchedules, error) {
	if err := queue.CheckDueLimit(limit); err != nil {
		return queue.DueSchedules{}, err
	}
	var out queue.DueSchedules
	rows, err := queryAll(ctx, s.db, dueSchedulesQuery.text, dueArgs(at, limit), func(r *sql.Rows) (queue.DueSchedule, error) {
		var (
			d                         queue.DueSchedule
			nextAfter, due, last      sql.NullTime
			id, version               sql.NullInt64
			name, cron, zone, misfire sql.NullString
		)
		err := r.Scan(&out.Now, &nextAfter, &id, &name, &cron, &zone, &misfire, &version, &due, &last)
		out.Now, out.Next = out.Now.UTC(), utc(nextAfter)
		d.ID, d.Name, d.Cron, d.TimeZone, d.Misfire, d.Version = id.Int64, name.String, cron.String, zone.String, queue.Misfire(misfire.String), version.Int64
		d.NextFireAt, d.LastFireAt = utc(due), utc(last)
		return d, err
	})
	if err != nil {
		return queue.DueSchedules{}, wrap("reading due schedules", err)
	}
	for _, d := range rows {
		if d.ID != 0 { // the row of the time alone has none
			out.Due = append(out.Due, d)
		}
	}
	return out, nil
}

// fireArgs binds fireBatch.
func fireArgs(f queue.ScheduleFire) []any {
	return []any{
		sql.Named("id", f.ID),
		sql.Named("version", f.Version),
		sql.Named("fire_at", typedTime(f.FireAt)),
		sql.Named("missed", int32(f.Missed)),
		sql.Named("skip_missed", f.SkipMissed),
		sql.Named("next", typedTime(f.Next)),
	}
}

// FireSchedule implements queue.Store.
func (s *Store) FireSchedule(ctx context.Context, f queue.ScheduleFire) (queue.Fired, error) {
	var out queue.Fired
	err := retryDeadlock(ctx, func() error {
		out = queue.Fired{}
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			if _, err := c.ExecContext(ctx, beginTranXact); err != nil {
				return err
			}
			var outcome string
			r, err := scanRun(c.QueryRowContext(ctx, fireBatch.text, fireArgs(f)...), &outcome)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				// fired by another scheduler, held by one now, or changed since it was read
			case err != nil:
				return err
			default:
				out = queue.Fired{Won: true, Outcome: queue.FireOutcome(outcome)}
				switch out.Outcome {
				case queue.FireEnqueued:
					out.Queue = r.task.Queue
					if out.TaskID, err = s.startRun(ctx, c, r, queue.ScheduleCreatedBy(r.name), f.FireAt); err != nil {
						return err
					}
				case queue.FireSkippedOverlap:
					out.TaskID = r.lastTask
				}
			}
			_, err = c.ExecContext(ctx, commitTran)
			return err
		})
	})
	if err != nil {
		return queue.Fired{}, wrap("firing schedule "+f.Name, err)
	}
	return out, nil
}
