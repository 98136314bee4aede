package postgres

import (
	"context"
	"fmt"
	"time"

	"readpast/internal/queue"
)

// getSQL reads a task and, in the same snapshot, what Why needs: the queue's
// settings and running count (only when capped), the group's counter, and the
// lowest unfinished stage of its chain (only when it waits on it).
var getSQL = `SELECT ` + taskColumnsOf("t") + `, now(),
		coalesce(q.paused, false), q.workers, q.max_running,
		CASE WHEN q.max_running IS NOT NULL THEN
			(SELECT count(*) FROM readpast_tasks r WHERE r.queue = t.queue AND r.state = 'running') ELSE 0 END,
		coalesce(g.running, 0), coalesce(g.max_running, 1),
		coalesce(cs.stage, 0), coalesce(cs.open, 0)
	FROM readpast_tasks t
	LEFT JOIN readpast_queues q ON q.name = t.queue
	LEFT JOIN readpast_groups g ON g.name = t.group_name
	LEFT JOIN LATERAL (
		SELECT c.stage, count(*) AS open FROM readpast_tasks c
		 WHERE t.chain_wait AND c.chain = t.chain AND c.state IN ('pending', 'running')
		 GROUP BY c.stage ORDER BY c.stage LIMIT 1) cs ON true
	WHERE t.id = $1`

// Get implements queue.Store; Why is filled for a pending task held back.
func (s *Store) Get(ctx context.Context, id int64) (*queue.Task, error) {
	var (
		now                            time.Time
		w                              queue.WaitInfo
		queueMax                       *int
		queueRunning, chainOpen        int64
		groupRunning, groupMax, chainS int
	)
	t, err := scanTask(s.pool.QueryRow(ctx, getSQL, id), &now, &w.QueuePaused, &w.QueueWorkers, &queueMax, &queueRunning,
		&groupRunning, &groupMax, &chainS, &chainOpen)
	switch {
	case isNoRows(err):
		return nil, fmt.Errorf("postgres: getting task %d: %w", id, queue.ErrNotFound)
	case err != nil:
		return nil, wrap(err, "getting task %d", id)
	}
	if t.State == queue.StatePending {
		w.Now, w.AvailableAt, w.Queue, w.QueueMax, w.QueueRunning = now, t.AvailableAt, t.Queue, queueMax, int(queueRunning)
		w.Chain, w.ChainWait, w.ChainStage, w.ChainOpen = t.Chain, t.ChainWait, chainS, int(chainOpen)
		w.Group, w.GroupRunning, w.GroupMax = t.Group, groupRunning, groupMax
		t.Why = w.Why()
	}
	return t, nil
}

// List implements queue.Store: keyset pages newest first (listSQL).
func (s *Store) List(ctx context.Context, p queue.ListParams) ([]*queue.Task, error) {
	q, args := listSQL(p)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, wrap(err, "listing tasks")
	}
	tasks, err := scanTasks(rows)
	return tasks, wrap(err, "listing tasks")
}

// listSQL is List's query. Each filter reads an index in id order (migration
// 000008): (queue, state) and a queue's states by readpast_tasks_list, running
// tasks by readpast_tasks_running, chains by their own, groups and schedules
// by theirs, which hold one range per state (migrations/*/000001_baseline); a state over
// all queues is merged per queue, and every state of a queue, a group or a
// schedule per state.
func listSQL(p queue.ListParams) (string, []any) { return listSQLOf(taskColumns, p) }

// listSQLOf is listSQL reading cols.
func listSQLOf(cols string, p queue.ListParams) (string, []any) {
	limit := p.Limit // checked and defaulted by queue.Checked
	pg := &page{cols: cols, table: "readpast_tasks"}
	if p.State != "" {
		pg.where = append(pg.where, "state = "+literal(string(p.State)))
	}
	if p.Queue != "" {
		pg.add("queue = $%d", p.Queue)
	}
	if p.Group != "" {
		pg.add("group_name = $%d", p.Group)
	}
	if p.Chain != "" {
		pg.add("chain = $%d", p.Chain)
	}
	if p.Schedule != "" {
		pg.add("schedule_name = $%d", p.Schedule)
	}
	if p.Before > 0 {
		pg.add("id < $%d", p.Before)
	}
	var q string
	var args []any
	switch {
	case p.EveryStateOfGroupOrSchedule(), p.Queue != "" && p.State == "" && p.Chain == "":
		q, args = pg.split(equalsEach("state", queue.States), limit)
	case p.Group != "" || p.Chain != "" || p.Schedule != "":
		q, args = pg.one(limit) // by the group's, the schedule's (of one state) or the chain's own index
	case p.Queue == "" && p.State != "" && p.State != queue.StateRunning:
		q, args = pg.perQueue(limit)
	default:
		q, args = pg.one(limit)
	}
	return q, args
}

// TaskAttempts implements queue.Store.
func (s *Store) TaskAttempts(ctx context.Context, taskID int64) ([]queue.AttemptRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+attemptColumns+` FROM readpast_attempts WHERE task_id = $1 ORDER BY attempt, id`, taskID)
	if err != nil {
		return nil, wrap(err, "reading the attempts of task %d", taskID)
	}
	out, err := scanAttempts(rows)
	return out, wrap(err, "reading the attempts of task %d", taskID)
}

// Queues implements queue.Store.
func (s *Store) Queues(ctx context.Context) ([]queue.Queue, error) {
	return s.queues(ctx, "")
}

// queues lists the queues with their counts per state: every queue with a
// settings row, and any queue named only by tasks. name "" means all.
func (s *Store) queues(ctx context.Context, name string) ([]queue.Queue, error) {
	rows, err := s.pool.Query(ctx, queuesSQL, name)
	if err != nil {
		return nil, wrap(err, "listing queues")
	}
	defer rows.Close()
	var out []queue.Queue
	for rows.Next() {
		var (
			q              queue.Queue
			updated        *time.Time
			state          *string
			n              int64
			retryMS, capMS *int64
		)
		if err := rows.Scan(&q.Name, &q.Workers, &q.MaxRunning, &q.Paused, &updated, &q.UpdatedBy, &state, &n, &q.DefaultTarget, &retryMS, &capMS, &q.ResultRows); err != nil {
			return nil, wrap(err, "listing queues")
		}
		q.Retry = queue.RetryOf(retryMS, capMS)
		if len(out) == 0 || out[len(out)-1].Name != q.Name {
			q.UpdatedAt = utc(updated)
			q.Counts = make(map[queue.State]int64, len(queue.States))
			for _, st := range queue.States {
				q.Counts[st] = 0
			}
			out = append(out, q)
		}
		if state != nil {
			out[len(out)-1].Counts[queue.State(*state)] = n
		}
	}
	return out, wrap(rows.Err(), "listing queues")
}

// queuesSQL lists the queues with their counts per state ($1: one queue's
// name, or ” for all).
// Unfinished tasks are counted, each state by an index that holds it in
// ranges that do not grow with history: pending ones per queue in
// readpast_tasks_list, running ones in readpast_tasks_running. Finished
// ones come from the readpast_counts rollup.
const queuesSQL = `WITH counts AS (
			SELECT q.name AS queue, 'pending' AS state,
			       (SELECT count(*) FROM readpast_tasks t WHERE t.queue = q.name AND t.state = 'pending') AS n
			  FROM readpast_queues q WHERE $1 = '' OR q.name = $1
			UNION ALL
			SELECT queue, state, count(*) FROM readpast_tasks
			 WHERE state = 'running' AND ($1 = '' OR queue = $1) GROUP BY queue, state
			UNION ALL
			SELECT queue, state, n FROM readpast_counts
			 WHERE n <> 0 AND ($1 = '' OR queue = $1)),
		names AS (
			SELECT name FROM readpast_queues WHERE $1 = '' OR name = $1
			UNION SELECT queue FROM counts)
		SELECT n.name, q.workers, q.max_running, coalesce(q.paused, false), q.updated_at,
		       coalesce(q.updated_by, ''), c.state, coalesce(c.n, 0), coalesce(q.default_target, ''), q.retry_interval_ms, q.retry_cap_ms,
		       coalesce(q.result_rows, 0)
		  FROM names n
		  LEFT JOIN readpast_queues q ON q.name = n.name
		  LEFT JOIN counts c ON c.queue = n.name
		 ORDER BY n.name`

// groupsSQL lists the groups with their pending tasks: per group, one range
// of readpast_tasks_group_state (group_name, state, id), which does not grow
// with the group's finished history (TestGroupsPendingReadsTheGroupIndex).
const groupsSQL = `SELECT g.name, g.max_running, g.running, g.updated_at, g.updated_by,
		(SELECT count(*) FROM readpast_tasks t WHERE t.group_name = g.name AND t.state = 'pending')
	FROM readpast_groups g ORDER BY g.name`

// Groups implements queue.Store.
func (s *Store) Groups(ctx context.Context) ([]queue.Group, error) {
	rows, err := s.pool.Query(ctx, groupsSQL)
	if err != nil {
		return nil, wrap(err, "listing groups")
	}
	defer rows.Close()
	var out []queue.Group
	for rows.Next() {
		var g queue.Group
		if err := rows.Scan(&g.Name, &g.MaxRunning, &g.Running, &g.UpdatedAt, &g.UpdatedBy, &g.Pending); err != nil {
			return nil, wrap(err, "listing groups")
		}
		g.UpdatedAt = g.UpdatedAt.UTC()
		out = append(out, g)
	}
	return out, wrap(rows.Err(), "listing groups")
}
