package sqlserver

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"readpast/internal/queue"
)

// Hold implements queue.Holder. It sends BEGIN TRAN on a connection of its own,
// then the operation's own batch, which begins and commits a transaction of its
// own: nested inside the outer one, its COMMIT TRAN only lowers @@TRANCOUNT to
// 1 (Microsoft's "Nesting transactions": only the outermost COMMIT commits), so
// every lock the batch took stays held until Release rolls back.
func (s *Store) Hold(ctx context.Context, op queue.HoldOp) (queue.Held, error) {
	run, err := s.holdRunner(op)
	if err != nil {
		return nil, err
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, wrap(fmt.Sprintf("holding a %s open: getting a connection", op.Kind), err)
	}
	h := &held{conn: conn}
	if _, err = conn.ExecContext(ctx, "BEGIN TRAN;"); err == nil {
		h.claimed, err = run(ctx, conn)
	}
	if err != nil {
		_ = h.Release(context.WithoutCancel(ctx))
		return nil, wrap(fmt.Sprintf("holding a %s open", op.Kind), err)
	}
	return h, nil
}

// holdRunner binds op's production batch and returns what sends it.
func (s *Store) holdRunner(op queue.HoldOp) (func(context.Context, *sql.Conn) ([]*queue.Task, error), error) {
	switch op.Kind {
	case queue.HoldClaim:
		if err := checkClaim(op.Claim); err != nil {
			return nil, err
		}
		token, err := newLeaseToken()
		if err != nil {
			return nil, err
		}
		args := claimArgs(op.Claim, token)
		return func(ctx context.Context, c *sql.Conn) ([]*queue.Task, error) {
			return queryTasks(ctx, c, claimBatch.text, args...)
		}, nil
	case queue.HoldFinish:
		return func(ctx context.Context, c *sql.Conn) ([]*queue.Task, error) {
			for _, a := range op.Attempts {
				if _, err := runFinish(ctx, c, finishBatch.text, a, modeFinish); err != nil {
					return nil, err
				}
			}
			return nil, nil
		}, nil
	case queue.HoldEnqueue:
		args, err := enqueueArgs(op.Tasks)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, c *sql.Conn) ([]*queue.Task, error) {
			rows, err := c.QueryContext(ctx, enqueueBatch.text, args...)
			if err != nil {
				return nil, err
			}
			return nil, closeRows(rows)
		}, nil
	case queue.HoldBulk:
		args := advanceBulkArgs(op.Bulk)
		return func(ctx context.Context, c *sql.Conn) ([]*queue.Task, error) {
			rows, err := c.QueryContext(ctx, advanceBulkBatch.text, args...)
			if err != nil {
				return nil, err
			}
			return nil, closeRows(rows)
		}, nil
	default: // queue.HoldCancel, HoldRetry, HoldDelete: one task's batch
		if err := checkActor(op.Actor); err != nil {
			return nil, err
		}
		batch := map[queue.HoldKind]query{queue.HoldCancel: cancelBatch, queue.HoldRetry: retryBatch, queue.HoldDelete: deleteTaskBatch}[op.Kind]
		args := taskActorArgs(op.TaskID, op.Actor)
		return func(ctx context.Context, c *sql.Conn) ([]*queue.Task, error) {
			rows, err := c.QueryContext(ctx, batch.text, args...)
			if err != nil {
				return nil, err
			}
			return nil, closeRows(rows)
		}, nil
	}
}

// held is an open transaction on a connection of its own.
type held struct {
	conn    *sql.Conn
	claimed []*queue.Task
	once    sync.Once
	err     error
}

func (h *held) Claimed() []*queue.Task { return h.claimed }

// Release rolls back and returns the connection to the pool; a connection
// whose rollback failed is closed instead (the server rolls back when the
// session ends).
func (h *held) Release(ctx context.Context) error {
	h.once.Do(func() {
		if _, err := h.conn.ExecContext(ctx, "IF @@TRANCOUNT > 0 ROLLBACK TRAN;"); err != nil {
			h.err = wrap("releasing a held transaction", err)
			discard(h.conn)
			return
		}
		_ = h.conn.Close()
	})
	return h.err
}
