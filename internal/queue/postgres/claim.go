package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"readpast/internal/queue"
)

const claimSQL = `SELECT ` + taskColumns + ` FROM readpast_claim($1, $2, $3, $4)`

// Claim implements queue.Store. The claim is one call of readpast_claim
// (docs/QUEUE.md, "Claiming"): one statement in its own implicit transaction,
// so one round trip. Only when the context carries a claim hook (tests) does it
// run in an explicit transaction, BEGIN pipelined with the claim, then the hook,
// then COMMIT.
func (s *Store) Claim(ctx context.Context, p queue.ClaimParams) ([]*queue.Task, error) {
	if err := queue.CheckClaim(p); err != nil {
		return nil, err
	}
	args := []any{p.Queue, p.Owner, p.Limit, p.LeaseDuration.Microseconds()}
	if !queue.HasClaimHook(ctx) {
		rows, err := s.pool.Query(ctx, claimSQL, args...)
		if err != nil {
			return nil, wrap(err, "claiming from queue %s", p.Queue)
		}
		tasks, err := scanTasks(rows)
		if err != nil {
			return nil, wrap(err, "claiming from queue %s", p.Queue)
		}
		return tasks, nil
	}
	return s.claimWithHook(ctx, p, args)
}

// claimWithHook claims inside an explicit transaction so that the claim hook
// runs with the claimed rows still locked and uncommitted.
func (s *Store) claimWithHook(ctx context.Context, p queue.ClaimParams, args []any) ([]*queue.Task, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, wrap(err, "claiming from queue %s: getting a connection", p.Queue)
	}
	// A connection released inside a transaction is discarded by the pool, so
	// no failure below can hand an open transaction to the next user.
	defer conn.Release()

	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(claimSQL, args...)
	br := conn.SendBatch(ctx, b)
	_, err = br.Exec()
	var tasks []*queue.Task
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			tasks, err = scanTasks(rows)
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.rollback(conn, "claim")
		return nil, wrap(err, "claiming from queue %s", p.Queue)
	}
	queue.RunClaimHook(ctx)
	tag, err := conn.Exec(ctx, "COMMIT")
	if err == nil && tag.String() != "COMMIT" {
		err = fmt.Errorf("the transaction was rolled back (%s)", tag)
	}
	if err != nil {
		// The commit may have happened before the connection failed: such tasks
		// are leased to an owner that never heard of them and come back when
		// their leases expire.
		s.log.Warn("claim commit failed; any tasks it claimed return when their leases expire",
			"queue", p.Queue, "owner", p.Owner, "err", err)
		return nil, wrap(err, "claiming from queue %s: committing", p.Queue)
	}
	return tasks, nil
}

// rollback ends a failed transaction on conn, even when the caller's context is
// done; if it cannot, the pool discards the connection on release, which ends
// the transaction on the server too.
func (s *Store) rollback(conn *pgxpool.Conn, what string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
		s.log.Debug("rollback failed; the connection is discarded", "of", what, "err", err)
	}
}
