package sqlserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"readpast/internal/queue"
)

// Runs of schedules: Run now, the due schedules, and fires (batches in
// sql_schedules.go). A fire or a Run now is one transaction on one session:
// BEGIN TRAN, the schedule's batch, the production enqueue batch (its own
// BEGIN and COMMIT only nest, as in Hold), the link of the task to the
// schedule, COMMIT. On any error write rolls the session back.

const (
	beginTranXact = "SET XACT_ABORT ON;\nBEGIN TRAN;"
	commitTran    = "COMMIT TRAN;"
)

// scanRun reads a schedule row's runColumns, then the extra destinations.
func scanRun(r *sql.Row, extra ...any) (queue.ScheduleRun, error) {
	var (
		x           queue.ScheduleRun
		priority    int16
		maxAttempts int32
		group       sql.NullString
		timeoutMS   int64
		targets     string
		limit       int32
	)
	err := r.Scan(append([]any{&x.ID, &x.Name, &x.Task.Queue, &x.Task.Body, &priority, &group, &maxAttempts, &timeoutMS,
		&x.Task.Transactional, &x.LastTaskID, &x.Task.Target, &x.Job, &targets, &limit}, extra...)...)
	x.Task.Targets, x.Task.FanOutLimit = queue.SplitSelectors(targets), int(limit)
	p := int(priority)
	x.Task.Priority, x.Task.Group, x.Task.MaxAttempts = &p, group.String, int(maxAttempts)
	x.Task.Timeout = time.Duration(timeoutMS) * time.Millisecond
	return x, err
}

// startRun enqueues the run's task with the production enqueue batch inside
// the session's open transaction, marks it as the schedule's (of fire time
// fireAt; zero for a Run now) and makes it the latest run. A schedule that
// fans out enqueues fan's tasks instead, in fan's group made with its limit;
// its first task stands for the run (unfinishedLastRun reads the group).
func (s *Store) startRun(ctx context.Context, c *sql.Conn, r queue.ScheduleRun, createdBy string, fireAt time.Time, fan *queue.FanOutFire) (int64, error) {
	if len(r.Task.Targets) > 0 && r.Job == "" {
		return s.startFanOut(ctx, c, r, createdBy, fireAt, fan)
	}
	if r.Job != "" {
		// A job's schedule: a run of the job (startRunBatch inside the
		// session's open transaction; its own BEGIN and COMMIT only nest),
		// its first step the run's task.
		run, err := startRunOn(ctx, c, r.StartRun(createdBy, fan))
		if err != nil || run.Duplicate {
			return run.TaskID, err
		}
		_, err = c.ExecContext(ctx, linkRunBatch.text, linkRunArgs(r, run.TaskID, fireAt)...)
		return run.TaskID, err
	}
	t, err := r.NewTask(createdBy, s.opts.MaxBodyBytes)
	if err != nil {
		return 0, err
	}
	args, err := enqueueArgs([]queue.NewTask{t})
	if err != nil {
		return 0, fmt.Errorf("the task of schedule %s: %w", r.Name, err)
	}
	var (
		id  int64
		dup bool // a schedule's task has no unique key: never a duplicate
	)
	if err := c.QueryRowContext(ctx, enqueueBatch.text, args...).Scan(&id, &dup); err != nil {
		return 0, err
	}
	_, err = c.ExecContext(ctx, linkRunBatch.text, linkRunArgs(r, id, fireAt)...)
	return id, err
}

// startFanOut is startRun of a schedule that fans out: the group, the tasks
// (one enqueue batch, its rows in the tasks' order) and their link.
func (s *Store) startFanOut(ctx context.Context, c *sql.Conn, r queue.ScheduleRun, createdBy string, fireAt time.Time, fan *queue.FanOutFire) (int64, error) {
	tasks, err := r.FanOutTasks(createdBy, s.opts.MaxBodyBytes, fan)
	if err != nil {
		return 0, err
	}
	args, err := enqueueArgs(tasks)
	if err != nil {
		return 0, fmt.Errorf("the tasks of schedule %s: %w", r.Name, err)
	}
	if _, err := c.ExecContext(ctx, fanOutGroupBatch.text, fanOutGroupArgs(fan, createdBy)...); err != nil {
		return 0, err
	}
	rows, err := c.QueryContext(ctx, enqueueBatch.text, args...)
	if err != nil {
		return 0, err
	}
	var ids []int64
	for rows.Next() {
		var (
			id  int64
			dup bool
		)
		if err := rows.Scan(&id, &dup); err != nil {
			_ = rows.Close()
			return 0, err
		}
		ids = append(ids, id)
	}
	if err := closeRows(rows); err != nil {
		return 0, err
	}
	if len(ids) != len(tasks) {
		return 0, fmt.Errorf("the tasks of schedule %s: the enqueue batch returned %d rows for %d tasks", r.Name, len(ids), len(tasks))
	}
	_, err = c.ExecContext(ctx, linkFanOutBatch.text, linkFanOutArgs(r, ids[0], fireAt, fan.Group)...)
	return ids[0], err
}

// fanOutGroupArgs binds fanOutGroupBatch.
func fanOutGroupArgs(fan *queue.FanOutFire, actor string) []any {
	return []any{sql.Named("group_name", fan.Group), sql.Named("max_running", int32(fan.Limit)), sql.Named("actor", actor)}
}

// linkFanOutArgs binds linkFanOutBatch.
func linkFanOutArgs(r queue.ScheduleRun, taskID int64, fireAt time.Time, group string) []any {
	return append(linkRunArgs(r, taskID, fireAt), sql.Named("group_name", group))
}

// linkRunArgs binds linkRunBatch.
func linkRunArgs(r queue.ScheduleRun, taskID int64, fireAt time.Time) []any {
	return []any{sql.Named("id", r.ID), sql.Named("name", r.Name), sql.Named("task_id", taskID), sql.Named("fire_at", datetime2(fireAt))}
}

// RunSchedule implements queue.Store.
func (s *Store) RunSchedule(ctx context.Context, name, actor string, fan *queue.FanOutFire) (queue.Enqueued, error) {
	var out queue.Enqueued
	err := retryConflicts(ctx, func() error {
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
				out = queue.Enqueued{ID: r.LastTaskID, Duplicate: true}
			default:
				id, err := s.startRun(ctx, c, r, actor, time.Time{}, fan)
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
	return []any{sql.Named("at", datetime2(at)), sql.Named("limit", int32(limit))}
}

// DueSchedules implements queue.Store.
func (s *Store) DueSchedules(ctx context.Context, at time.Time, limit int) (queue.DueSchedules, error) {
	var out queue.DueSchedules
	rows, err := queryAll(ctx, s.db, dueSchedulesQuery.text, dueArgs(at, limit), func(r *sql.Rows) (queue.DueSchedule, error) {
		var (
			d                         queue.DueSchedule
			nextAfter, due, last      sql.NullTime
			id, version               sql.NullInt64
			name, cron, zone, misfire sql.NullString
			targets                   sql.NullString
			limit                     sql.NullInt32
			job                       sql.NullString
		)
		err := r.Scan(&out.Now, &nextAfter, &id, &name, &cron, &zone, &misfire, &version, &due, &last, &targets, &limit, &job)
		d.Job = job.String
		d.Targets, d.FanOutLimit = queue.SplitSelectors(targets.String), int(limit.Int32)
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
		sql.Named("fire_at", datetime2(f.FireAt)),
		sql.Named("missed", int32(f.Missed)),
		sql.Named("skip_missed", f.SkipMissed),
		sql.Named("next", datetime2(f.Next)),
	}
}

// FireSchedule implements queue.Store.
func (s *Store) FireSchedule(ctx context.Context, f queue.ScheduleFire) (queue.Fired, error) {
	var out queue.Fired
	err := retryConflicts(ctx, func() error {
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
				out, err = r.Fired(queue.FireOutcome(outcome), func(by string) (int64, error) { return s.startRun(ctx, c, r, by, f.FireAt, f.FanOut) })
				if err != nil {
					return err
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
