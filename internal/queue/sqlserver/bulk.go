package sqlserver

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"readpast/internal/queue"
)

// scanBulk reads one row of bulkColumnList.
func scanBulk(r interface{ Scan(...any) error }) (*queue.BulkOp, error) {
	var (
		b                 queue.BulkOp
		owner             sql.NullString
		expires, finished sql.NullTime
	)
	err := r.Scan(&b.ID, &b.Action, &b.Selection, &b.Matched, &b.Done, &b.Skipped, &b.Cursor, &b.CreatedAt, &b.CreatedBy,
		&owner, &b.LeaseToken, &expires, &b.UpdatedAt, &finished, &b.Error)
	if err != nil {
		return nil, err
	}
	b.CreatedAt, b.UpdatedAt, b.LeaseOwner = b.CreatedAt.UTC(), b.UpdatedAt.UTC(), owner.String
	b.LeaseExpiresAt, b.FinishedAt = nullTimePtr(expires), nullTimePtr(finished)
	return &b, nil
}

func nullTimePtr(v sql.NullTime) *time.Time {
	if !v.Valid {
		return nil
	}
	t := v.Time.UTC()
	return &t
}

func createBulkArgs(b queue.NewBulk) []any {
	return []any{sql.Named("action", varchar(string(b.Action))), sql.Named("selection", maxText(b.Selection.String())),
		sql.Named("matched", b.Matched), sql.Named("actor", b.Actor), sql.Named("detail", maxText(queue.BulkAuditDetail(b)))}
}

// CreateBulk implements queue.BulkStore.
func (s *Store) CreateBulk(ctx context.Context, b queue.NewBulk) (int64, error) {
	if err := checkActor(b.Actor); err != nil {
		return 0, err
	}
	var id int64
	err := retryDeadlock(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			return c.QueryRowContext(ctx, createBulkBatch.text, createBulkArgs(b)...).Scan(&id)
		})
	})
	if err != nil {
		return 0, wrap("creating a bulk "+string(b.Action), err)
	}
	return id, nil
}

func claimBulkArgs(owner string, lease time.Duration) []any {
	return []any{sql.Named("owner", owner), sql.Named("lease_ms", lease.Milliseconds())}
}

// ClaimBulk implements queue.BulkStore.
func (s *Store) ClaimBulk(ctx context.Context, owner string, lease time.Duration) (*queue.BulkOp, error) {
	var out *queue.BulkOp
	err := retryDeadlock(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			rows, err := c.QueryContext(ctx, claimBulkBatch.text, claimBulkArgs(owner, lease)...)
			if err != nil {
				return err
			}
			out = nil
			if rows.Next() {
				if out, err = scanBulk(rows); err != nil {
					_ = rows.Close()
					return err
				}
			}
			return closeRows(rows)
		})
	})
	if err != nil {
		return nil, wrap("claiming a bulk operation", err)
	}
	return out, nil
}

func advanceBulkArgs(a queue.BulkAdvance) []any {
	return []any{sql.Named("id", a.ID), sql.Named("token", a.Token), sql.Named("cursor", a.Cursor),
		sql.Named("done", a.Done), sql.Named("skipped", a.Skipped), sql.Named("finished", bit(a.Finished)),
		sql.Named("lease_ms", a.Lease.Milliseconds()), sql.Named("error", maxText(a.Error))}
}

// AdvanceBulk implements queue.BulkStore.
func (s *Store) AdvanceBulk(ctx context.Context, a queue.BulkAdvance) error {
	var n int
	err := retryDeadlock(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			return c.QueryRowContext(ctx, advanceBulkBatch.text, advanceBulkArgs(a)...).Scan(&n)
		})
	})
	if err != nil {
		return wrap(fmt.Sprintf("advancing bulk operation %d", a.ID), err)
	}
	if n == 0 {
		return fmt.Errorf("advancing bulk operation %d: %w", a.ID, queue.ErrLeaseLost)
	}
	return nil
}

// GetBulk implements queue.BulkStore.
func (s *Store) GetBulk(ctx context.Context, id int64) (*queue.BulkOp, error) {
	out, err := queryAll(ctx, s.db, getBulkQuery.text, idArgs("id", id), func(r *sql.Rows) (*queue.BulkOp, error) { return scanBulk(r) })
	if err != nil {
		return nil, wrap(fmt.Sprintf("reading bulk operation %d", id), err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("bulk operation %d: %w", id, queue.ErrNotFound)
	}
	return out[0], nil
}

// Bulks implements queue.BulkStore.
func (s *Store) Bulks(ctx context.Context, before int64, limit int) ([]queue.BulkOp, error) {
	if before == 0 {
		before = 1<<63 - 1
	}
	out, err := queryAll(ctx, s.db, bulksQuery.text, []any{sql.Named("limit", limit), sql.Named("before", before)},
		func(r *sql.Rows) (queue.BulkOp, error) {
			b, err := scanBulk(r)
			if err != nil {
				return queue.BulkOp{}, err
			}
			return *b, nil
		})
	if err != nil {
		return nil, wrap("listing bulk operations", err)
	}
	return out, nil
}

// DeleteTask implements queue.BulkStore.
func (s *Store) DeleteTask(ctx context.Context, id int64, actor string) error {
	if err := checkActor(actor); err != nil {
		return err
	}
	var (
		before  sql.NullString
		deleted bool
	)
	err := retryDeadlock(ctx, func() error {
		return s.write(ctx, func(ctx context.Context, c *sql.Conn) error {
			return c.QueryRowContext(ctx, deleteTaskBatch.text, taskActorArgs(id, actor)...).Scan(&before, &deleted)
		})
	})
	switch {
	case err != nil:
		return wrap(fmt.Sprintf("deleting task %d", id), err)
	case !before.Valid:
		return fmt.Errorf("deleting task %d: %w", id, queue.ErrNotFound)
	case !deleted:
		return queue.NotFinished(id, queue.State(before.String))
	}
	return nil
}

func countTasksArgs(p queue.ListParams, max int) []any {
	var state any = sql.NullString{}
	if p.State != "" {
		state = varchar(string(p.State))
	}
	var pattern any = sql.NullString{}
	if p.Text != "" {
		pattern = maxText(queue.LikeContains(p.Text))
	}
	return namedArgs(countTasksQuery, map[string]any{
		"limit": max, "state": state, "queue": nullString(p.Queue), "group": nullString(p.Group),
		"chain": nullString(p.Chain), "schedule": nullString(p.Schedule), "pattern": pattern,
	})
}

// CountTasks implements queue.BulkStore.
func (s *Store) CountTasks(ctx context.Context, p queue.ListParams, max int) (int64, error) {
	var n int64
	err := retryDeadlock(ctx, func() error {
		return s.db.QueryRowContext(ctx, countTasksQuery.text, countTasksArgs(p, max)...).Scan(&n)
	})
	if err != nil {
		return 0, wrap("counting tasks", err)
	}
	return n, nil
}

// searchArgs picks the search batch for p's filters and binds it.
func searchArgs(p queue.ListParams, window int) (query, []any) {
	q := searchBatch
	if p.EveryStateOfGroupOrSchedule() {
		q = searchByStateBatch
	}
	var state any = sql.NullString{}
	if p.State != "" {
		state = varchar(string(p.State))
	}
	return q, namedArgs(q, map[string]any{
		"window": window, "limit": p.Limit, "state": state, "queue": nullString(p.Queue), "group": nullString(p.Group),
		"chain": nullString(p.Chain), "schedule": nullString(p.Schedule), "before": max(p.Before, 0),
		"pattern": maxText(queue.LikeContains(p.Text)),
	})
}

// Search implements queue.BulkStore (searchBatch).
func (s *Store) Search(ctx context.Context, p queue.ListParams, window int) ([]*queue.Task, int64, error) {
	q, args := searchArgs(p, window)
	var (
		tasks     []*queue.Task
		scannedTo int64
	)
	err := retryDeadlock(ctx, func() error {
		rows, err := s.db.QueryContext(ctx, q.text, args...)
		if err != nil {
			return err
		}
		var low sql.NullInt64
		var n int
		for rows.Next() {
			if err := rows.Scan(&low, &n); err != nil {
				_ = rows.Close()
				return err
			}
		}
		if !rows.NextResultSet() {
			_ = rows.Close()
			return fmt.Errorf("the search answered no rows after its window")
		}
		tasks = tasks[:0]
		for rows.Next() {
			t, err := scanTask(rows)
			if err != nil {
				_ = rows.Close()
				return err
			}
			tasks = append(tasks, t)
		}
		scannedTo = 0
		if n == window {
			scannedTo = low.Int64
		}
		return closeRows(rows)
	})
	if err != nil {
		return nil, 0, wrap("searching tasks", err)
	}
	return tasks, scannedTo, nil
}
