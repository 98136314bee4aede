package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"readpast/internal/queue"
)

const taskColumns = `id, queue, body, priority, available_at, group_name, chain, stage, chain_wait,
	continue_on_failure, max_attempts, timeout_ms, transactional, state, attempts, lease_owner,
	lease_token, lease_expires_at, session_id, cancel_requested, created_at, created_by,
	started_at, finished_at, last_error, unique_key, schedule_name, fire_at, target, name`

type scanner interface{ Scan(...any) error }

func scanTask(r scanner) (*queue.Task, error) {
	var (
		t                                     queue.Task
		avail, created                        int64
		group, chain, owner, session, lastErr sql.NullString
		key, schedule, name                   sql.NullString
		token, expires, started, finished     sql.NullInt64
		fireAt                                sql.NullInt64
		timeoutMS                             int64
	)
	err := r.Scan(&t.ID, &t.Queue, &t.Body, &t.Priority, &avail, &group, &chain, &t.Stage, &t.ChainWait,
		&t.ContinueOnFailure, &t.MaxAttempts, &timeoutMS, &t.Transactional, &t.State, &t.Attempts, &owner,
		&token, &expires, &session, &t.CancelRequested, &created, &t.CreatedBy, &started, &finished, &lastErr, &key,
		&schedule, &fireAt, &t.Target, &name)
	if err != nil {
		return nil, err
	}
	t.AvailableAt, t.CreatedAt = fromMicros(avail), fromMicros(created)
	t.Group, t.Chain, t.LeaseOwner, t.SessionID, t.LastError = group.String, chain.String, owner.String, session.String, lastErr.String
	t.LeaseToken, t.UniqueKey, t.Schedule, t.FireAt, t.Name = token.Int64, key.String, schedule.String, nullMicros(fireAt), name.String
	t.LeaseExpiresAt, t.StartedAt, t.FinishedAt = nullMicros(expires), nullMicros(started), nullMicros(finished)
	t.Timeout = time.Duration(timeoutMS) * time.Millisecond
	return &t, nil
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// getTasks reads tasks by id, in the order of ids.
func getTasks(ctx context.Context, q querier, ids []int64) ([]*queue.Task, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := q.QueryContext(ctx, `SELECT `+taskColumns+` FROM readpast_tasks WHERE id IN (`+placeholders(len(ids))+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("reading tasks: %w", err)
	}
	defer rows.Close()
	byID := map[int64]*queue.Task{}
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, err
		}
		byID[t.ID] = t
	}
	out := make([]*queue.Task, 0, len(ids))
	for _, id := range ids {
		if t := byID[id]; t != nil {
			out = append(out, t)
		}
	}
	return out, rows.Err()
}

// Get implements queue.Store.
func (s *Store) Get(ctx context.Context, id int64) (*queue.Task, error) {
	t, err := scanTask(s.r.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM readpast_tasks WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("task %d: %w", id, queue.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading task %d: %w", id, err)
	}
	if t.State == queue.StatePending {
		if t.Why, err = s.why(ctx, t); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (s *Store) why(ctx context.Context, t *queue.Task) (string, error) {
	w := queue.WaitInfo{Now: s.nowFor(), AvailableAt: t.AvailableAt, Queue: t.Queue, Chain: t.Chain, ChainWait: t.ChainWait, Group: t.Group}
	var maxRunning, workers sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT paused, workers, max_running, (SELECT count(*) FROM readpast_tasks WHERE state = 'running' AND queue = ?1)
		FROM readpast_queues WHERE name = ?1`, t.Queue).Scan(&w.QueuePaused, &workers, &maxRunning, &w.QueueRunning)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("reading queue %s: %w", t.Queue, err)
	}
	if maxRunning.Valid {
		m := int(maxRunning.Int64)
		w.QueueMax = &m
	}
	w.QueueWorkers = intPtr(workers)
	if t.Group != "" {
		err := s.r.QueryRowContext(ctx, `SELECT running, max_running FROM readpast_groups WHERE name = ?`, t.Group).Scan(&w.GroupRunning, &w.GroupMax)
		if err != nil {
			return "", fmt.Errorf("reading group %s: %w", t.Group, err)
		}
	}
	if t.Transactional && t.State == queue.StatePending {
		err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM readpast_tasks INDEXED BY readpast_tasks_running
			WHERE state = 'running' AND transactional = 1)`).Scan(&w.WriterBusy)
		if err != nil {
			return "", fmt.Errorf("looking for a running transactional task: %w", err)
		}
	}
	if t.ChainWait {
		err := s.r.QueryRowContext(ctx, `SELECT stage, count(*) FROM readpast_tasks
			WHERE chain = ? AND state IN ('pending','running') GROUP BY stage ORDER BY stage LIMIT 1`, t.Chain).Scan(&w.ChainStage, &w.ChainOpen)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return "", fmt.Errorf("reading chain %s: %w", t.Chain, err)
		}
	}
	return w.Why(), nil
}

// List implements queue.Store.
func (s *Store) List(ctx context.Context, p queue.ListParams) ([]*queue.Task, error) {
	q, args := listSQL(p)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing tasks: %w", err)
	}
	defer rows.Close()
	var out []*queue.Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("listing tasks: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// listSQL is List's query, a keyset page newest first. Each filter reads an
// index in id order; a group's and a schedule's hold one range per state
// (migrations/*/000001_baseline), and every state of one is a merge of their newest rows.
func listSQL(p queue.ListParams) (string, []any) { return listSQLOf(taskColumns, p) }

// listSQLOf is listSQL reading cols.
func listSQLOf(cols string, p queue.ListParams) (string, []any) {
	limit := p.Limit // checked and defaulted by queue.Checked
	var where []string
	var args []any
	add := func(cond string, v any) {
		where = append(where, cond)
		args = append(args, v)
	}
	if p.State != "" {
		add("state = ?", string(p.State))
	}
	if p.Queue != "" {
		add("queue = ?", p.Queue)
	}
	if p.Group != "" {
		add("group_name = ?", p.Group)
	}
	if p.Chain != "" {
		add("chain = ?", p.Chain)
	}
	if p.Schedule != "" {
		add("schedule_name = ?", p.Schedule)
	}
	if p.Before > 0 {
		add("id < ?", p.Before)
	}
	if p.EveryStateOfGroupOrSchedule() {
		q, args := mergedPage(cols, "readpast_tasks", where, args, "state", queue.States, limit)
		return q, args
	}
	q, args := keysetPage(cols, "readpast_tasks", where, args, limit)
	return q, args
}

// Queues implements queue.Store.
func (s *Store) Queues(ctx context.Context) ([]queue.Queue, error) { return s.queues(ctx, "") }

// queues lists every queue, or only the named one.
func (s *Store) queues(ctx context.Context, only string) ([]queue.Queue, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+queueColumns+`
		FROM readpast_queues WHERE ?1 = '' OR name = ?1 ORDER BY name`, only)
	if err != nil {
		return nil, fmt.Errorf("listing queues: %w", err)
	}
	var out []queue.Queue
	index := map[string]int{}
	for rows.Next() {
		q, err := scanQueue(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		q.Counts = map[queue.State]int64{}
		index[q.Name] = len(out)
		out = append(out, q)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// Unfinished tasks are counted (their partial indexes do not grow with
	// history); finished ones come from the readpast_counts rollup.
	counts, err := s.r.QueryContext(ctx, `SELECT queue, state, count(*) FROM readpast_tasks
		WHERE state IN ('pending', 'running') AND (?1 = '' OR queue = ?1) GROUP BY queue, state
		UNION ALL
		SELECT queue, state, n FROM readpast_counts WHERE n <> 0 AND (?1 = '' OR queue = ?1)`, only)
	if err != nil {
		return nil, fmt.Errorf("counting tasks per queue: %w", err)
	}
	defer counts.Close()
	for counts.Next() {
		var name string
		var st queue.State
		var n int64
		if err := counts.Scan(&name, &st, &n); err != nil {
			return nil, err
		}
		if i, ok := index[name]; ok {
			out[i].Counts[st] = n
		}
	}
	return out, counts.Err()
}

func intPtr(v sql.NullInt64) *int {
	if !v.Valid {
		return nil
	}
	i := int(v.Int64)
	return &i
}

// Groups implements queue.Store.
func (s *Store) Groups(ctx context.Context) ([]queue.Group, error) {
	// Pending is a range of readpast_tasks_group_state per group: it does not
	// grow with the group's finished history.
	rows, err := s.r.QueryContext(ctx, `SELECT g.name, g.max_running, g.running, g.updated_at, g.updated_by,
		(SELECT count(*) FROM readpast_tasks t WHERE t.group_name = g.name AND t.state = 'pending')
		FROM readpast_groups g ORDER BY g.name`)
	if err != nil {
		return nil, fmt.Errorf("listing groups: %w", err)
	}
	defer rows.Close()
	var out []queue.Group
	for rows.Next() {
		var g queue.Group
		var updated int64
		if err := rows.Scan(&g.Name, &g.MaxRunning, &g.Running, &updated, &g.UpdatedBy, &g.Pending); err != nil {
			return nil, err
		}
		g.UpdatedAt = fromMicros(updated)
		out = append(out, g)
	}
	return out, rows.Err()
}
