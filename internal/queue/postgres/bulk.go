package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"readpast/internal/queue"
)

const bulkColumns = `id, action, selection, matched, done, skipped, cursor_id, created_at, created_by,
	coalesce(lease_owner, ''), lease_token, lease_expires_at, updated_at, finished_at, error`

func scanBulk(r pgx.Row) (*queue.BulkOp, error) {
	var b queue.BulkOp
	err := r.Scan(&b.ID, &b.Action, &b.Selection, &b.Matched, &b.Done, &b.Skipped, &b.Cursor, &b.CreatedAt, &b.CreatedBy,
		&b.LeaseOwner, &b.LeaseToken, &b.LeaseExpiresAt, &b.UpdatedAt, &b.FinishedAt, &b.Error)
	if err != nil {
		return nil, err
	}
	b.CreatedAt, b.UpdatedAt = b.CreatedAt.UTC(), b.UpdatedAt.UTC()
	b.LeaseExpiresAt, b.FinishedAt = utcPtr(b.LeaseExpiresAt), utcPtr(b.FinishedAt)
	return &b, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// CreateBulk implements queue.BulkStore: the cursor starts past the newest
// task (the primary key's last entry), and the audit row is written by the
// same statement.
func (s *Store) CreateBulk(ctx context.Context, b queue.NewBulk) (int64, error) {
	var id int64
	err := s.write(ctx, func(ctx context.Context, c conn) error {
		return c.QueryRow(ctx, `WITH b AS (
			INSERT INTO readpast_bulk_ops (action, selection, matched, cursor_id, created_by)
			VALUES ($1, $2, $3, (SELECT coalesce(max(id), 0) + 1 FROM readpast_tasks), $4) RETURNING id),
		a AS (INSERT INTO readpast_audit (actor, action, target, detail)
			SELECT $4, 'bulk_' || $1, 'bulk ' || b.id, $5 FROM b)
		SELECT id FROM b`, string(b.Action), b.Selection.String(), b.Matched, b.Actor, queue.BulkAuditDetail(b)).Scan(&id)
	})
	return id, wrap(err, "creating a bulk %s", b.Action)
}

// ClaimBulk implements queue.BulkStore: FOR UPDATE SKIP LOCKED, so two
// nodes claiming at once never wait for each other.
func (s *Store) ClaimBulk(ctx context.Context, owner string, lease time.Duration) (*queue.BulkOp, error) {
	var out *queue.BulkOp
	err := s.write(ctx, func(ctx context.Context, c conn) error {
		b, err := scanBulk(c.QueryRow(ctx, `UPDATE readpast_bulk_ops SET lease_owner = $1, lease_token = lease_token + 1,
				lease_expires_at = now() + $2 * interval '1 microsecond', updated_at = now()
			WHERE id = (SELECT id FROM readpast_bulk_ops
				WHERE finished_at IS NULL AND (lease_expires_at IS NULL OR lease_expires_at < now())
				ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
			RETURNING `+bulkColumns, owner, lease.Microseconds()))
		if isNoRows(err) {
			return nil
		}
		out = b
		return err
	})
	return out, wrap(err, "claiming a bulk operation")
}

// AdvanceBulk implements queue.BulkStore; the end's audit row is written by
// the same statement.
func (s *Store) AdvanceBulk(ctx context.Context, a queue.BulkAdvance) error {
	var n int
	err := s.write(ctx, func(ctx context.Context, c conn) error {
		return c.QueryRow(ctx, advanceBulkSQL, advanceBulkArgs(a)...).Scan(&n)
	})
	if err != nil {
		return wrap(err, "advancing bulk operation %d", a.ID)
	}
	if n == 0 {
		return fmt.Errorf("postgres: advancing bulk operation %d: %w", a.ID, queue.ErrLeaseLost)
	}
	return nil
}

// GetBulk implements queue.BulkStore.
func (s *Store) GetBulk(ctx context.Context, id int64) (*queue.BulkOp, error) {
	b, err := scanBulk(s.pool.QueryRow(ctx, `SELECT `+bulkColumns+` FROM readpast_bulk_ops WHERE id = $1`, id))
	if isNoRows(err) {
		return nil, fmt.Errorf("postgres: bulk operation %d: %w", id, queue.ErrNotFound)
	}
	return b, wrap(err, "reading bulk operation %d", id)
}

// Bulks implements queue.BulkStore: a range of the primary key, newest first.
func (s *Store) Bulks(ctx context.Context, before int64, limit int) ([]queue.BulkOp, error) {
	if before == 0 {
		before = 1<<63 - 1
	}
	rows, err := s.pool.Query(ctx, `SELECT `+bulkColumns+` FROM readpast_bulk_ops WHERE id < $1 ORDER BY id DESC LIMIT $2`, before, limit)
	if err != nil {
		return nil, wrap(err, "listing bulk operations")
	}
	defer rows.Close()
	var out []queue.BulkOp
	for rows.Next() {
		b, err := scanBulk(rows)
		if err != nil {
			return nil, wrap(err, "listing bulk operations")
		}
		out = append(out, *b)
	}
	return out, wrap(rows.Err(), "listing bulk operations")
}

// DeleteTask implements queue.BulkStore: one statement deletes the task if
// it is finished, its log rows, shrinks the finished counts and audits; the
// state read beside it (the statement's snapshot) says why nothing was
// deleted. A retry racing it makes the row pending first, and the delete,
// which waits for that row, then finds it unfinished and leaves it.
func (s *Store) DeleteTask(ctx context.Context, id int64, actor string) error {
	var deleted, before *string
	err := s.write(ctx, func(ctx context.Context, c conn) error {
		return c.QueryRow(ctx, deleteTaskSQL, id, actor).Scan(&deleted, &before)
	})
	switch {
	case err != nil:
		return wrap(err, "deleting task %d", id)
	case deleted != nil:
		return nil
	case before == nil:
		return fmt.Errorf("postgres: deleting task %d: %w", id, queue.ErrNotFound)
	}
	return queue.NotFinished(id, queue.State(*before))
}

// CountTasks implements queue.BulkStore: the ids of List's query (each filter
// by its index, listSQL), up to max, counted.
func (s *Store) CountTasks(ctx context.Context, p queue.ListParams, max int) (int64, error) {
	text := p.Text
	p.Before, p.Limit, p.Text = 0, max, ""
	q, args := listSQLOf("id", p)
	if text != "" {
		args = append(args, queue.LikeContains(text))
		q = fmt.Sprintf(`SELECT id FROM readpast_tasks WHERE id = ANY (ARRAY(%s)) AND (body ILIKE $%[2]d ESCAPE '\' OR name ILIKE $%[2]d ESCAPE '\')`, q, len(args))
	}
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM (`+q+`) c`, args...).Scan(&n)
	return n, wrap(err, "counting tasks")
}

// advanceBulkSQL is AdvanceBulk's statement; the end's audit row is written
// by it too.
const advanceBulkSQL = `WITH b AS (
			UPDATE readpast_bulk_ops SET cursor_id = $3, done = done + $4, skipped = skipped + $5,
				lease_expires_at = CASE WHEN $6 THEN NULL ELSE now() + $7 * interval '1 microsecond' END,
				updated_at = now(), finished_at = CASE WHEN $6 THEN now() END, error = $8
			WHERE id = $1 AND lease_token = $2 AND finished_at IS NULL
			RETURNING id, created_by, action, done, skipped),
		a AS (INSERT INTO readpast_audit (actor, action, target, detail)
			SELECT created_by, 'bulk_' || action || '_done', 'bulk ' || id,
				'done ' || done || ', skipped ' || skipped || CASE WHEN $8 <> '' THEN ': ' || $8 ELSE '' END
			FROM b WHERE $6)
		SELECT count(*) FROM b`

func advanceBulkArgs(a queue.BulkAdvance) []any {
	return []any{a.ID, a.Token, a.Cursor, a.Done, a.Skipped, a.Finished, a.Lease.Microseconds(), a.Error}
}

// deleteTaskSQL is DeleteTask's statement ($1 id, $2 actor).
const deleteTaskSQL = `WITH t AS (
			DELETE FROM readpast_tasks WHERE id = $1 AND state IN ('succeeded', 'failed', 'cancelled')
			RETURNING id, queue, state),
		l AS (DELETE FROM readpast_attempts WHERE task_id IN (SELECT id FROM t) RETURNING 1),
		r AS (DELETE FROM readpast_results WHERE task_id IN (SELECT id FROM t)),
		a AS (INSERT INTO readpast_audit (actor, action, target, detail) SELECT $2, 'delete', 'task ' || id, state FROM t),
		n AS (SELECT readpast_count(array_agg(queue), array_agg(state), array_agg(-1::bigint)) FROM t)
		SELECT (SELECT state FROM t), (SELECT state FROM readpast_tasks WHERE id = $1) FROM n`

// Search implements queue.BulkStore: the window is List's query of the other
// filters (each by its index, listSQL) reading ids only, up to window of
// them; the bodies of the window's rows are matched by primary key, and
// nothing outside the window is read. Both reads run in one repeatable-read
// transaction: the bound and the matches are of one snapshot.
func (s *Store) Search(ctx context.Context, p queue.ListParams, window int) ([]*queue.Task, int64, error) {
	limit, pattern := p.Limit, queue.LikeContains(p.Text)
	p.Limit, p.Text = window, ""
	inner, args := listSQLOf("id", p)
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, 0, wrap(err, "searching tasks")
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var low *int64
	var n int
	if err := tx.QueryRow(ctx, `SELECT min(id), count(*) FROM (`+inner+`) w`, args...).Scan(&low, &n); err != nil {
		return nil, 0, wrap(err, "searching tasks")
	}
	q := fmt.Sprintf(`SELECT %s FROM readpast_tasks WHERE id = ANY (ARRAY(%s)) AND (body ILIKE $%[3]d ESCAPE '\' OR name ILIKE $%[3]d ESCAPE '\')
		ORDER BY id DESC LIMIT $%[4]d`,
		taskColumns, inner, len(args)+1, len(args)+2)
	rows, err := tx.Query(ctx, q, append(args, pattern, limit)...)
	if err != nil {
		return nil, 0, wrap(err, "searching tasks")
	}
	tasks, err := scanTasks(rows)
	if err != nil {
		return nil, 0, wrap(err, "searching tasks")
	}
	var scannedTo int64
	if n == window && low != nil {
		scannedTo = *low
	}
	return tasks, scannedTo, nil
}
