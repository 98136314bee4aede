package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"readpast/internal/queue"
)

// Hold implements queue.Holder: the operation's own code runs inside a write
// transaction (BEGIN IMMEDIATE) that stays open until Release. SQLite has one
// writer, so while it is held every other write of the store waits; readers
// go on (WAL).
func (s *Store) Hold(ctx context.Context, op queue.HoldOp) (queue.Held, error) {
	tasks := op.Tasks
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("holding a %s open: beginning transaction: %w", op.Kind, err)
	}
	h := &held{tx: tx}
	now := s.now()
	switch op.Kind {
	case queue.HoldClaim:
		h.claimed, err = claimTx(ctx, tx, now, op.Claim)
	case queue.HoldFinish:
		_, err = endAllTx(tx, now, op.Attempts, false)
	case queue.HoldEnqueue:
		_, err = enqueueTx(ctx, tx, now, tasks)
	case queue.HoldCancel:
		_, err = s.cancelTx(tx, now, op.TaskID, op.Actor)
	case queue.HoldRetry:
		err = s.retryTx(tx, now, op.TaskID, op.Actor)
	case queue.HoldDelete:
		err = s.deleteTaskTx(tx, now, op.TaskID, op.Actor)
	case queue.HoldBulk:
		err = s.advanceBulkTx(tx, now, op.Bulk)
	}
	if err != nil {
		_ = h.Release(ctx)
		return nil, fmt.Errorf("holding a %s open: %w", op.Kind, err)
	}
	return h, nil
}

// held is an open write transaction.
type held struct {
	tx      *sql.Tx
	claimed []*queue.Task
	once    sync.Once
	err     error
}

func (h *held) Claimed() []*queue.Task { return h.claimed }

func (h *held) Release(context.Context) error {
	h.once.Do(func() {
		if err := h.tx.Rollback(); err != nil {
			h.err = fmt.Errorf("releasing a held transaction: %w", err)
		}
	})
	return h.err
}
