package sqlserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"readpast/internal/queue"
)

// Get returns one task with Why filled in.
func (s *Store) Get(ctx context.Context, id int64) (*queue.Task, error) {
	var (
		t                           *queue.Task
		now                         time.Time
		paused                      sql.NullBool
		queueMax, queueRunning      sql.NullInt64
		queueWorkers                sql.NullInt64
		groupRunning, groupMax      sql.NullInt64
		chainStage, chainUnfinished sql.NullInt64
	)
	err := retryDeadlock(ctx, func() error {
		var err error
		row := s.db.QueryRowContext(ctx, getTaskQuery.text, idArgs("id", id)...)
		t, err = scanTask(row, &now, &paused, &queueWorkers, &queueMax, &queueRunning, &groupRunning, &groupMax, &chainStage, &chainUnfinished)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("reading task %d: %w", id, queue.ErrNotFound)
	}
	if err != nil {
		return nil, wrap(fmt.Sprintf("reading task %d", id), err)
	}
	if t.State == queue.StatePending {
		w := queue.WaitInfo{
			Now:          now.UTC(),
			AvailableAt:  t.AvailableAt,
			Chain:        t.Chain,
			ChainWait:    t.ChainWait,
			ChainStage:   int(chainStage.Int64),
			ChainOpen:    int(chainUnfinished.Int64),
			Group:        t.Group,
			GroupRunning: int(groupRunning.Int64),
			GroupMax:     int(groupMax.Int64),
			Queue:        t.Queue,
			QueuePaused:  paused.Valid && paused.Bool,
			QueueMax:     intPtr(queueMax),
			QueueWorkers: intPtr(queueWorkers),
			QueueRunning: int(queueRunning.Int64),
		}
		if t.Group != "" && !groupMax.Valid {
			w.Group = "" // no group row: nothing to report
		}
		t.Why = w.Why()
	}
	return t, nil
}

// List returns tasks newest first, filtered, one keyset page at a time.
func (s *Store) List(ctx context.Context, p queue.ListParams) ([]*queue.Task, error) {
	lq, args := listArgs(p)
	var tasks []*queue.Task
	err := retryDeadlock(ctx, func() error {
		var err error
		tasks, err = queryTasks(ctx, s.db, lq.text, args...)
		return err
	})
	if err != nil {
		return nil, wrap("listing tasks", err)
	}
	return tasks, nil
}

// listArgs validates the filters, picks the query for them (listTasksQuery; a
// group's or a schedule's tasks of every state merge a range per state,
// listTasksByStateQuery) and binds that query's parameters.
func listArgs(p queue.ListParams) (query, []any) {
	limit := p.Limit // checked and defaulted by queue.Checked
	lq := listTasksQuery
	if p.EveryStateOfGroupOrSchedule() {
		lq = listTasksByStateQuery
	}
	var state any = sql.NullString{}
	if p.State != "" {
		state = varchar(string(p.State))
	}
	return lq, namedArgs(lq, map[string]any{
		"limit":    limit,
		"state":    state,
		"queue":    nullString(p.Queue),
		"group":    nullString(p.Group),
		"chain":    nullString(p.Chain),
		"schedule": nullString(p.Schedule),
		"before":   max(p.Before, 0),
	})
}

// Queues lists every known queue with its settings and counts per state.
func (s *Store) Queues(ctx context.Context) ([]queue.Queue, error) {
	return s.queues(ctx, "")
}

// queueRow is one row of queuesQuery: a queue and one of its state counts.
type queueRow struct {
	q     queue.Queue
	state sql.NullString
	count int64
}

// queues reads all queues, or the one named, with counts for every state.
func (s *Store) queues(ctx context.Context, name string) ([]queue.Queue, error) {
	rows, err := queryAll(ctx, s.db, queuesQuery.text, queuesArgs(name), func(r *sql.Rows) (queueRow, error) {
		var (
			x                   queueRow
			workers, maxRunning sql.NullInt64
			count               sql.NullInt64
			updated             sql.NullTime
			retryMS, capMS      sql.NullInt64
		)
		err := r.Scan(&x.q.Name, &workers, &maxRunning, &x.q.Paused, &updated, &x.q.UpdatedBy, &x.state, &count, &x.q.DefaultTarget, &retryMS, &capMS, &x.q.ResultRows)
		x.q.Retry = queue.RetryOf(nullInt64(retryMS), nullInt64(capMS))
		x.q.UpdatedAt = utc(updated)
		x.q.Workers = intPtr(workers)
		x.q.MaxRunning = intPtr(maxRunning)
		x.count = count.Int64
		return x, err
	})
	if err != nil {
		return nil, wrap("listing queues", err)
	}
	var out []queue.Queue
	for _, x := range rows { // ordered by name: a queue's rows are adjacent
		if n := len(out); n == 0 || out[n-1].Name != x.q.Name {
			x.q.Counts = make(map[queue.State]int64, len(queue.States))
			for _, st := range queue.States {
				x.q.Counts[st] = 0
			}
			out = append(out, x.q)
		}
		if x.state.Valid {
			out[len(out)-1].Counts[queue.State(x.state.String)] = x.count
		}
	}
	return out, nil
}

// Groups lists the known concurrency groups.
func (s *Store) Groups(ctx context.Context) ([]queue.Group, error) {
	out, err := queryAll(ctx, s.db, groupsQuery.text, nil, func(r *sql.Rows) (queue.Group, error) {
		var g queue.Group
		err := r.Scan(&g.Name, &g.MaxRunning, &g.Running, &g.UpdatedAt, &g.UpdatedBy, &g.Pending)
		g.UpdatedAt = g.UpdatedAt.UTC()
		return g, err
	})
	if err != nil {
		return nil, wrap("listing groups", err)
	}
	return out, nil
}

// TaskAttempts returns the execution-log rows of one task, oldest first.
func (s *Store) TaskAttempts(ctx context.Context, taskID int64) ([]queue.AttemptRecord, error) {
	out, err := queryAll(ctx, s.db, taskAttemptsQuery.text, idArgs("task_id", taskID), scanAttempt)
	if err != nil {
		return nil, wrap(fmt.Sprintf("reading the attempts of task %d", taskID), err)
	}
	return out, nil
}

// queryAll runs a read, retrying a deadlock victim, and scans every row.
func queryAll[T any](ctx context.Context, db querier, text string, args []any, scan func(*sql.Rows) (T, error)) ([]T, error) {
	var out []T
	err := retryDeadlock(ctx, func() error {
		out = out[:0]
		rows, err := db.QueryContext(ctx, text, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			v, err := scan(rows)
			if err != nil {
				_ = rows.Close()
				return err
			}
			out = append(out, v)
		}
		return closeRows(rows)
	})
	return out, err
}

// idArgs binds a single id parameter.
func idArgs(name string, id int64) []any { return []any{sql.Named(name, id)} }

// queuesArgs binds the queues query's @name: NULL lists every queue.
func queuesArgs(name string) []any { return []any{sql.Named("name", nullString(name))} }

// intPtr turns a nullable integer into *int.
func intPtr(v sql.NullInt64) *int {
	if !v.Valid {
		return nil
	}
	n := int(v.Int64)
	return &n
}

// nullInt64 is v, or nil for NULL.
func nullInt64(v sql.NullInt64) *int64 {
	if !v.Valid {
		return nil
	}
	return &v.Int64
}
