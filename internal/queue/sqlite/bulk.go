package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"readpast/internal/queue"
)

const bulkColumns = `id, action, selection, matched, done, skipped, cursor_id, created_at, created_by,
	lease_owner, lease_token, lease_expires_at, updated_at, finished_at, error`

func scanBulk(r scanner) (*queue.BulkOp, error) {
	var (
		b                 queue.BulkOp
		created, updated  int64
		owner             sql.NullString
		expires, finished sql.NullInt64
	)
	err := r.Scan(&b.ID, &b.Action, &b.Selection, &b.Matched, &b.Done, &b.Skipped, &b.Cursor, &created, &b.CreatedBy,
		&owner, &b.LeaseToken, &expires, &updated, &finished, &b.Error)
	if err != nil {
		return nil, err
	}
	b.CreatedAt, b.UpdatedAt, b.LeaseOwner = fromMicros(created), fromMicros(updated), owner.String
	b.LeaseExpiresAt, b.FinishedAt = timePtr(expires), timePtr(finished)
	return &b, nil
}

func timePtr(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicros(v.Int64)
	return &t
}

func bulkTarget(id int64) string { return "bulk " + strconv.FormatInt(id, 10) }

// CreateBulk implements queue.BulkStore: the cursor starts past the newest
// task (the rowid's maximum, read from the primary key).
func (s *Store) CreateBulk(ctx context.Context, b queue.NewBulk) (int64, error) {
	var id int64
	err := s.write(ctx, "creating a bulk "+string(b.Action), func(ctx context.Context, tx *sql.Tx, now int64) error {
		err := tx.QueryRow(`INSERT INTO readpast_bulk_ops (action, selection, matched, cursor_id, created_at, created_by, updated_at)
			VALUES (?, ?, ?, (SELECT coalesce(max(id), 0) + 1 FROM readpast_tasks), ?, ?, ?) RETURNING id`,
			b.Action, b.Selection.String(), b.Matched, now, b.Actor, now).Scan(&id)
		if err != nil {
			return err
		}
		return s.audit(tx, now, b.Actor, "bulk_"+string(b.Action), bulkTarget(id), queue.BulkAuditDetail(b))
	})
	return id, err
}

// ClaimBulk implements queue.BulkStore.
func (s *Store) ClaimBulk(ctx context.Context, owner string, lease time.Duration) (*queue.BulkOp, error) {
	var out *queue.BulkOp
	err := s.write(ctx, "claiming a bulk operation", func(ctx context.Context, tx *sql.Tx, now int64) error {
		b, err := scanBulk(tx.QueryRow(`UPDATE readpast_bulk_ops SET lease_owner = ?, lease_token = lease_token + 1,
				lease_expires_at = ?, updated_at = ?
			WHERE id = (SELECT id FROM readpast_bulk_ops INDEXED BY readpast_bulk_ops_open
				WHERE finished_at IS NULL AND (lease_expires_at IS NULL OR lease_expires_at < ?) ORDER BY id LIMIT 1)
			RETURNING `+bulkColumns, owner, now+lease.Microseconds(), now, now))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		out = b
		return err
	})
	return out, err
}

// AdvanceBulk implements queue.BulkStore.
func (s *Store) AdvanceBulk(ctx context.Context, a queue.BulkAdvance) error {
	return s.write(ctx, fmt.Sprintf("advancing bulk operation %d", a.ID), func(ctx context.Context, tx *sql.Tx, now int64) error {
		return s.advanceBulkTx(tx, now, a)
	})
}

// advanceBulkTx is AdvanceBulk inside the caller's write transaction.
func (s *Store) advanceBulkTx(tx *sql.Tx, now int64, a queue.BulkAdvance) error {
	var (
		actor, action string
		done, skipped int64
	)
	finished := sql.NullInt64{Int64: now, Valid: a.Finished}
	err := tx.QueryRow(`UPDATE readpast_bulk_ops SET cursor_id = ?, done = done + ?, skipped = skipped + ?,
			lease_expires_at = CASE WHEN ? THEN NULL ELSE ? END, updated_at = ?, finished_at = ?, error = ?
		WHERE id = ? AND lease_token = ? AND finished_at IS NULL
		RETURNING created_by, action, done, skipped`,
		a.Cursor, a.Done, a.Skipped, a.Finished, now+a.Lease.Microseconds(), now, finished, a.Error, a.ID, a.Token).
		Scan(&actor, &action, &done, &skipped)
	if errors.Is(err, sql.ErrNoRows) {
		return queue.ErrLeaseLost
	}
	if err != nil || !a.Finished {
		return err
	}
	return s.audit(tx, now, actor, "bulk_"+action+"_done", bulkTarget(a.ID), queue.BulkDoneDetail(done, skipped, a.Error))
}

// GetBulk implements queue.BulkStore.
func (s *Store) GetBulk(ctx context.Context, id int64) (*queue.BulkOp, error) {
	b, err := scanBulk(s.r.QueryRowContext(ctx, `SELECT `+bulkColumns+` FROM readpast_bulk_ops WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("bulk operation %d: %w", id, queue.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading bulk operation %d: %w", id, err)
	}
	return b, nil
}

// Bulks implements queue.BulkStore: a range of the primary key, newest first.
func (s *Store) Bulks(ctx context.Context, before int64, limit int) ([]queue.BulkOp, error) {
	if before == 0 {
		before = 1<<63 - 1
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+bulkColumns+` FROM readpast_bulk_ops WHERE id < ? ORDER BY id DESC LIMIT ?`, before, limit)
	if err != nil {
		return nil, fmt.Errorf("listing bulk operations: %w", err)
	}
	defer rows.Close()
	var out []queue.BulkOp
	for rows.Next() {
		b, err := scanBulk(rows)
		if err != nil {
			return nil, fmt.Errorf("listing bulk operations: %w", err)
		}
		out = append(out, *b)
	}
	return out, rows.Err()
}

// DeleteTask implements queue.BulkStore.
func (s *Store) DeleteTask(ctx context.Context, id int64, actor string) error {
	return s.write(ctx, fmt.Sprintf("deleting task %d", id), func(ctx context.Context, tx *sql.Tx, now int64) error {
		return s.deleteTaskTx(tx, now, id, actor)
	})
}

// deleteTaskTx is DeleteTask inside the caller's write transaction.
func (s *Store) deleteTaskTx(tx *sql.Tx, now int64, id int64, actor string) error {
	var st queue.State
	var q string
	err := tx.QueryRow(`SELECT state, queue FROM readpast_tasks WHERE id = ?`, id).Scan(&st, &q)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("task %d: %w", id, queue.ErrNotFound)
	}
	if err != nil {
		return err
	}
	if !st.Finished() {
		return queue.NotFinished(id, st)
	}
	if _, err := tx.Exec(`DELETE FROM readpast_attempts WHERE task_id = ?`, id); err != nil {
		return err
	}
	if _, err := tx.Exec(`DELETE FROM readpast_results WHERE task_id = ?`, id); err != nil {
		return err
	}
	if _, err := tx.Exec(`DELETE FROM readpast_tasks WHERE id = ?`, id); err != nil {
		return err
	}
	if err := countFinished(tx, q, st, -1); err != nil {
		return err
	}
	return s.audit(tx, now, actor, "delete", taskTarget(id), string(st))
}

// CountTasks implements queue.BulkStore: the ids of List's query, up to max,
// counted (listSQL reads each filter by its index).
func (s *Store) CountTasks(ctx context.Context, p queue.ListParams, max int) (int64, error) {
	text := p.Text
	p.Before, p.Limit, p.Text = 0, max, ""
	q, args := listSQLOf("id", p)
	if text != "" {
		pattern := queue.LikeContains(text)
		q, args = `SELECT id FROM readpast_tasks WHERE id IN (`+q+`) AND (body LIKE ? ESCAPE '\' OR name LIKE ? ESCAPE '\')`, append(args, pattern, pattern)
	}
	var n int64
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM (`+q+`)`, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting tasks: %w", err)
	}
	return n, nil
}

// Search implements queue.BulkStore: the window is List's query of the other
// filters (each by its index) reading ids only, up to window of them; the
// bodies of the window's rows are matched, and nothing outside it is read.
// Both reads run in one read transaction, so the bound and the matches are
// of one snapshot.
func (s *Store) Search(ctx context.Context, p queue.ListParams, window int) ([]*queue.Task, int64, error) {
	limit, pattern := p.Limit, queue.LikeContains(p.Text)
	p.Limit, p.Text = window, ""
	inner, args := listSQLOf("id", p)
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, fmt.Errorf("searching tasks: %w", err)
	}
	defer tx.Rollback()
	var low sql.NullInt64
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT min(id), count(*) FROM (`+inner+`)`, args...).Scan(&low, &n); err != nil {
		return nil, 0, fmt.Errorf("searching tasks: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+taskColumns+` FROM readpast_tasks WHERE id IN (`+inner+`)
		AND (body LIKE ? ESCAPE '\' OR name LIKE ? ESCAPE '\') ORDER BY id DESC LIMIT ?`, append(args, pattern, pattern, limit)...)
	if err != nil {
		return nil, 0, fmt.Errorf("searching tasks: %w", err)
	}
	defer rows.Close()
	var out []*queue.Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("searching tasks: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("searching tasks: %w", err)
	}
	var scannedTo int64
	if n == window {
		scannedTo = low.Int64
	}
	return out, scannedTo, nil
}
