package postgres

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"readpast/internal/queue"
)

// Hold implements queue.Holder: it runs the operation's own statement (the
// readpast_* function production calls) inside BEGIN on a connection of its
// own and keeps the transaction open until Release.
func (s *Store) Hold(ctx context.Context, op queue.HoldOp) (queue.Held, error) {
	var (
		sql  string
		args []any
	)
	switch op.Kind {
	case queue.HoldClaim:
		sql, args = claimSQL, claimArgs(op.Claim)
	case queue.HoldFinish:
		sql, args = endSQL, endArgs(modeFinish, op.Attempts)
	case queue.HoldEnqueue:
		sql, args = enqueueSQL, enqueueArgs(op.Tasks)
	case queue.HoldCancel:
		sql, args = cancelSQL, []any{op.TaskID, op.Actor}
	case queue.HoldRetry:
		sql, args = retrySQL, []any{op.TaskID, op.Actor}
	case queue.HoldDelete:
		sql, args = deleteTaskSQL, []any{op.TaskID, op.Actor}
	case queue.HoldBulk:
		sql, args = advanceBulkSQL, advanceBulkArgs(op.Bulk)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, wrap(err, "holding a %s open: getting a connection", op.Kind)
	}
	h := &held{conn: conn}
	tx, err := conn.Begin(ctx)
	if err != nil {
		conn.Release()
		return nil, wrap(err, "holding a %s open: beginning", op.Kind)
	}
	h.tx = tx
	rows, err := tx.Query(ctx, sql, args...)
	if err == nil {
		if op.Kind == queue.HoldClaim {
			h.claimed, err = scanTasks(rows)
		} else {
			rows.Close()
			err = rows.Err()
		}
	}
	if err != nil {
		_ = h.Release(context.WithoutCancel(ctx))
		return nil, wrap(err, "holding a %s open", op.Kind)
	}
	return h, nil
}

// held is an open transaction on a connection taken from the pool.
type held struct {
	conn    *pgxpool.Conn
	tx      pgx.Tx
	claimed []*queue.Task
	once    sync.Once
	err     error
}

func (h *held) Claimed() []*queue.Task { return h.claimed }

// Release rolls back and returns the connection; a connection whose rollback
// failed is closed instead, which ends the transaction on the server too.
func (h *held) Release(ctx context.Context) error {
	h.once.Do(func() {
		if err := h.tx.Rollback(ctx); err != nil {
			h.err = wrap(err, "releasing a held transaction")
			_ = h.conn.Hijack().Close(ctx)
			return
		}
		h.conn.Release()
	})
	return h.err
}
