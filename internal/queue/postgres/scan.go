package postgres

import (
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"readpast/internal/queue"
)

// taskColumns is the column list every task read selects, in scanTask's order.
const taskColumns = `id, queue, body, priority, available_at, group_name, chain, stage, chain_wait,
	continue_on_failure, max_attempts, timeout_ms, transactional, state, attempts, lease_owner,
	lease_token, lease_expires_at, session_id, cancel_requested, created_at, created_by,
	started_at, finished_at, last_error, unique_key, schedule_name, fire_at, target, name`

// scanTask reads one row of taskColumns (plus extra destinations after them).
func scanTask(row pgx.Row, extra ...any) (*queue.Task, error) {
	var (
		t                                 queue.Task
		group, chain, owner, session, err *string
		key, schedule, name               *string
		token                             *int64
		expires, started, finished        *time.Time
		fireAt                            *time.Time
		timeoutMS                         int64
		state                             string
	)
	dest := []any{&t.ID, &t.Queue, &t.Body, &t.Priority, &t.AvailableAt, &group, &chain, &t.Stage, &t.ChainWait,
		&t.ContinueOnFailure, &t.MaxAttempts, &timeoutMS, &t.Transactional, &state, &t.Attempts, &owner,
		&token, &expires, &session, &t.CancelRequested, &t.CreatedAt, &t.CreatedBy,
		&started, &finished, &err, &key, &schedule, &fireAt, &t.Target, &name}
	if e := row.Scan(append(dest, extra...)...); e != nil {
		return nil, e
	}
	t.State = queue.State(state)
	t.Timeout = time.Duration(timeoutMS) * time.Millisecond
	t.Group, t.Chain, t.LeaseOwner, t.SessionID, t.LastError = str(group), str(chain), str(owner), str(session), str(err)
	t.UniqueKey, t.Schedule, t.FireAt, t.Name = str(key), str(schedule), utc(fireAt), str(name)
	if token != nil {
		t.LeaseToken = *token
	}
	t.AvailableAt, t.CreatedAt = t.AvailableAt.UTC(), t.CreatedAt.UTC()
	t.LeaseExpiresAt, t.StartedAt, t.FinishedAt = utc(expires), utc(started), utc(finished)
	return &t, nil
}

// scanTasks reads every row of taskColumns.
func scanTasks(rows pgx.Rows) ([]*queue.Task, error) {
	defer rows.Close()
	var out []*queue.Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// utc turns a nullable timestamptz into a UTC time, zero for NULL.
func utc(p *time.Time) time.Time {
	if p == nil {
		return time.Time{}
	}
	return p.UTC()
}

// nullTime is nil for the zero time, so it is written as NULL.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// taskColumnsOf is taskColumns qualified with a table alias, for joins.
func taskColumnsOf(alias string) string {
	parts := strings.Split(taskColumns, ",")
	for i, p := range parts {
		parts[i] = alias + "." + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}
