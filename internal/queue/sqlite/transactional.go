package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"readpast/internal/queue"
	"readpast/internal/resultset"
	"readpast/internal/sqlrun"
	"readpast/internal/sqlscript"
)

// RunTransactional implements queue.Store (docs/WORKERS.md, "Transactional
// tasks on SQLite").
//
// SQLite has one writer. A transactional body holds the write lock from its
// BEGIN IMMEDIATE to its COMMIT, so for the whole body nobody else can write:
// not claims, not finishes, not heartbeats, of any node on the file. Three
// things keep that from hurting:
//
//   - The body takes the store's writer slot (its one writer connection)
//     first: the other writes of this process wait their turn in order
//     instead of failing on SQLITE_BUSY, and claims admit transactional tasks
//     one at a time (claim.go), so the others wait unclaimed, their timeouts
//     not running.
//   - Lease time stops while the writer is held: in the same transaction as
//     the body, every running lease is extended by as long as the body held
//     the writer. Nobody could heartbeat meanwhile, and nobody could reclaim
//     either, so after the commit no live lease looks expired.
//   - The body runs on a connection of its own, opened for it and closed after
//     it: PRAGMAs, temporary tables and the like die with it and never reach
//     the store's writer. Before the completion, the PRAGMAs that decide how
//     the completion writes are set back, a savepoint proves the body left
//     the transaction it was given, and temporary objects named like the
//     store's tables (which would take the completion's writes) fail the
//     attempt.
func (s *Store) RunTransactional(ctx context.Context, a queue.Attempt, body string) (queue.TxResult, error) {
	var res queue.TxResult
	runs, err := sqlscript.Runs(body, sqlscript.SQLite)
	if err != nil {
		res.BodyErr = err
		return res, nil
	}
	if len(runs) == 0 {
		return res, &queue.ValidationError{Field: "body", Reason: "is empty: give the SQL the task runs"}
	}
	if a.StartedAt.IsZero() {
		a.StartedAt = time.Now()
	}
	slot, err := s.w.Conn(ctx)
	if err != nil {
		return res, fmt.Errorf("running transactional task %d: waiting for the writer: %w", a.TaskID, err)
	}
	defer slot.Close()
	conn, err := s.bodies.Conn(ctx)
	if err != nil {
		return res, fmt.Errorf("running transactional task %d: connecting: %w", a.TaskID, err)
	}
	defer conn.Close() // the bodies pool keeps no idle connection: this one ends here

	// BEGIN IMMEDIATE (_txlock=immediate). Not under ctx: database/sql rolls
	// a transaction back by itself when its BeginTx context ends, and fails
	// its Commit, so a body stopped by its timeout would race that rollback
	// against undoBody's, which must commit the lease compensation. The
	// body's statements run under ctx, which interrupts them.
	tx, err := conn.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return res, fmt.Errorf("running transactional task %d: beginning: %w", a.TaskID, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	held := s.now()
	capture := resultset.FromContext(ctx)
	_ = sqlrun.WithSQLiteContext(ctx, func() error {
		res.RowsAffected, res.BodyErr = runBody(ctx, tx, runs, capture)
		return nil
	})
	res.Results = capture.Encoded()

	dctx, cancel := queue.Detached(ctx)
	defer cancel()
	if res.BodyErr == nil {
		res.BodyErr = restoreSession(dctx, tx)
	}
	if res.BodyErr != nil {
		res.RowsAffected = 0
		return res, s.undoBody(dctx, slot, tx, held)
	}

	now := s.now()
	a.Outcome, a.Error, a.RowsAffected, a.FinishedAt = queue.OutcomeSucceeded, "", res.RowsAffected, fromMicros(now)
	a.Results = res.Results
	fin, err := endAttempt(prepared(tx), now, a, false)
	if err == nil && fin.Err == nil {
		err = compensateLeases(dctx, tx, held, now)
	}
	if err != nil || fin.Err != nil {
		_ = tx.Rollback()
		// The body is undone; the leases are still owed their time.
		_ = s.compensateOn(dctx, slot, held)
		if err != nil {
			return res, fmt.Errorf("running transactional task %d: recording success: %w", a.TaskID, err)
		}
		return res, fmt.Errorf("running transactional task %d: %w", a.TaskID, fin.Err)
	}
	if err := tx.Commit(); err != nil {
		return res, fmt.Errorf("running transactional task %d: committing: %w", a.TaskID, err)
	}
	res.Committed, res.Recorded, res.Finish = true, true, fin
	return res, nil
}

// bodySavepoint marks the start of the body inside the task's transaction.
const bodySavepoint = "readpast_body"

// runBody runs the batches inside a savepoint and stops at the first that
// fails; sqlite3_interrupt stops a statement when ctx ends. total_changes()
// counts rows written on the connection (changes() would repeat the last DML's
// count after a DDL statement).
func runBody(ctx context.Context, tx *sql.Tx, runs []sqlscript.Run, capture *resultset.Capture) (int64, error) {
	var before, after int64
	if err := tx.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&before); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, "SAVEPOINT "+bodySavepoint); err != nil {
		return 0, err
	}
	for _, r := range runs {
		if err := sqlrun.ExecSQLite(ctx, tx, r.Text, capture); err != nil {
			if ctx.Err() != nil {
				err = context.Cause(ctx)
			}
			if len(runs) > 1 {
				err = fmt.Errorf("%s: %w", r.Label, err)
			}
			return 0, err
		}
	}
	if err := tx.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&after); err != nil {
		return 0, err
	}
	return after - before, nil
}

// restorePragmas set back what a body may have changed on its connection that
// decides how the completion writes: query_only would refuse it,
// ignore_check_constraints would let a wrong state through, and the others
// change how its statements behave. (synchronous, journal_mode and
// foreign_keys cannot change inside a transaction: a body that tries fails.)
const restorePragmas = `PRAGMA query_only = 0;
PRAGMA ignore_check_constraints = 0;
PRAGMA recursive_triggers = 0;
PRAGMA defer_foreign_keys = 0;
PRAGMA reverse_unordered_selects = 0;`

// restoreSession checks that the body left the task's transaction open (its
// savepoint is still there), sets the pragmas back, and refuses temporary
// objects named like the store's tables. The error says what the body did.
func restoreSession(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, "RELEASE "+bodySavepoint); err != nil {
		return fmt.Errorf("the body ended the task's transaction (COMMIT or ROLLBACK): a transactional task's body must leave that to ReadPast, which commits it with the completion (%v)", err)
	}
	if _, err := tx.ExecContext(ctx, restorePragmas); err != nil {
		return fmt.Errorf("restoring the connection's settings after the body: %w", err)
	}
	var shadows string
	err := tx.QueryRowContext(ctx, `SELECT coalesce(group_concat(name, ', '), '') FROM temp.sqlite_schema
		WHERE name LIKE 'readpast%'`).Scan(&shadows)
	if err != nil {
		return fmt.Errorf("checking the body's temporary objects: %w", err)
	}
	if shadows != "" {
		return fmt.Errorf("the body created temporary objects named like the store's tables (%s): the completion would write to them instead", shadows)
	}
	return nil
}

// undoBody rolls the body back and still gives the leases the time the
// writer was held, then commits that. Where the savepoint is gone (the body
// ended the transaction, or it was released before a later check failed)
// there is nothing to roll back into: the whole transaction is rolled back and
// the leases get a transaction of their own, on the writer slot this run
// holds.
func (s *Store) undoBody(ctx context.Context, slot *sql.Conn, tx *sql.Tx, held int64) error {
	if _, err := tx.ExecContext(ctx, "ROLLBACK TO "+bodySavepoint); err == nil {
		if err := compensateLeases(ctx, tx, held, s.now()); err == nil {
			return tx.Commit()
		}
	}
	_ = tx.Rollback()
	return s.compensateOn(ctx, slot, held)
}

// compensateOn extends the leases in a transaction of its own on the writer
// slot (the store's writer connection, which the caller holds).
func (s *Store) compensateOn(ctx context.Context, slot *sql.Conn, held int64) error {
	tx, err := slot.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("extending leases after a transactional task: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := compensateLeases(ctx, tx, held, s.now()); err != nil {
		return err
	}
	return tx.Commit()
}

// compensateLeases extends every running lease that was still live when the
// writer was taken (at held) by as long as it was held, up to now: lease time
// stops while nobody can heartbeat.
func compensateLeases(ctx context.Context, tx *sql.Tx, held, now int64) error {
	if now <= held {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE readpast_tasks SET lease_expires_at = lease_expires_at + ?
		WHERE state = 'running' AND lease_expires_at >= ?`, now-held, held)
	if err != nil {
		return fmt.Errorf("extending leases for the time the writer was held: %w", err)
	}
	return nil
}
