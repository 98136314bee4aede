package sqlserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"readpast/internal/queue"
	"readpast/internal/resultset"
	"readpast/internal/sqlrun"
	"readpast/internal/sqlscript"
)

// RunTransactional implements queue.Store. One session of the store's pool,
// taken for the task:
//
//  1. beginTxBatch: the session named after the attempt (CONTEXT_INFO),
//     BEGIN TRAN, an application lock owned by that transaction (its mark),
//     and the session id, in one round trip.
//  2. The body's batches, each sent as it is (no parameters, so CREATE
//     PROCEDURE and the like work), its PRINT/RAISERROR messages and rows
//     gathered as the target executor gathers them (sqlrun.RunMSSQL). When
//     ctx ends the driver sends an attention and the statement stops.
//  3. restoreBatch sets the session back to a fixed state (restore.go:
//     restoreOptions says which options and why) and reads XACT_STATE(),
//     @@TRANCOUNT, whether the mark is still held and who the session runs
//     as, and names the session again: the completion runs only in the
//     transaction begun in 1, still committable, at nesting level 1, as the
//     login that connected. After a body that failed, rollbackAndRestore
//     rolls back and sets the same options.
//  4. markCommittedBatch: the task's own row marked committed under the
//     lease, and COMMIT TRAN, in one round trip. The attempt's end is
//     recorded after, by the caller's ordinary finish (queue.TxResult).
//
// Steps 3 and 4 run under queue.Detached once the body has succeeded. A
// deadlock victim in step 4 rolled everything back, body included, so the
// whole task runs again (retryConflicts); a deadlock in the body is the body's
// failure. The session is then reset (sqlrun.ResetMSSQL, which also sets
// READ COMMITTED: the reset keeps the isolation level) before it goes back
// to the pool, or closed when its state is unknown, when the body may have
// made a ##global table or left EXECUTE AS in force, so nothing the body did
// to it reaches the store's next request.
func (s *Store) RunTransactional(ctx context.Context, a queue.Attempt, body string) (queue.TxResult, error) {
	runs, err := sqlscript.Runs(body, sqlscript.TSQL)
	if err != nil {
		return queue.TxResult{BodyErr: err}, nil
	}
	if len(runs) == 0 {
		return queue.TxResult{}, &queue.ValidationError{Field: "body", Reason: "is empty: give the SQL the task runs"}
	}
	if a.StartedAt.IsZero() {
		a.StartedAt = time.Now()
	}
	var res queue.TxResult
	err = retryConflicts(ctx, func() error {
		var err error
		res, err = s.runTransactionalOnce(ctx, a, runs, createsGlobalTemp(body))
		return err
	})
	if err != nil {
		return res, wrap(fmt.Sprintf("running transactional task %d", a.TaskID), err)
	}
	return res, nil
}

// beginTxBatch begins the task's transaction and marks it with an
// application lock that the transaction owns (sp_getapplock, @LockOwner
// 'Transaction'): SQL Server releases it exactly when that transaction ends,
// by COMMIT or ROLLBACK, and a transaction the body begins afterwards does not
// have it. So after the body, APPLOCK_MODE says whether the session is still
// in the transaction begun here. (CURRENT_TRANSACTION_ID() would say the same
// on SQL Server 2016 and later; Babelfish lacks it, and the lock works on
// both.) The resource names the task and its lease, so no other session ever
// asks for it: the call never waits and never fails. The session carries the
// attempt's name (queue.AttemptSessionName) in CONTEXT_INFO, as a target's
// body session does, so that a node reclaiming the task's lease finds and
// ends it (target.SessionEnder): the body's transaction rolls back. SET
// CONTEXT_INFO is a session setting, not undone by a ROLLBACK; restoreBatch
// names the session again after clearing the body's settings, and the reset
// that hands the session back clears it. SET NOCOUNT OFF: the body's row
// counts are reported as the target executor reports them.
func beginTxBatch(mark, name string) string {
	return `SET NOCOUNT OFF;
SET CONTEXT_INFO ` + sqlrun.MSSQLContextInfo(name) + `;
BEGIN TRAN;
DECLARE @marked int;
EXEC @marked = sp_getapplock @Resource = N'` + mark + `', @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = 0;
SELECT CAST(@@SPID AS bigint), @marked;`
}

// txMark is the application lock resource that marks task a's transaction:
// digits and slashes only, so it is safe inside a literal.
func txMark(a queue.Attempt) string {
	return fmt.Sprintf("readpast/tx/%d/%d", a.TaskID, a.Token)
}

// createsGlobalTemp reports whether body may create a global temporary table
// (its text has "##"). Its session is then ended, as the plain target ends
// it: sp_reset_connection drops a session's #local tables but not its
// ##global ones, which live until the session that created them ends
// (Microsoft: "CREATE TABLE", temporary tables), so a pooled session would
// keep them, and their names, for as long as the pool keeps it.
func createsGlobalTemp(body string) bool { return strings.Contains(body, "##") }

// runTransactionalOnce is one try of RunTransactional; global says the session
// must end afterwards (createsGlobalTemp).
func (s *Store) runTransactionalOnce(ctx context.Context, a queue.Attempt, runs []sqlscript.Run, global bool) (res queue.TxResult, err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return res, err
	}
	clean := false
	defer func() { s.releaseTxConn(conn, clean && !global) }()

	var spid, marked int64
	mark, name := txMark(a), queue.AttemptSessionName(a.Lease)
	if err := conn.QueryRowContext(ctx, beginTxBatch(mark, name)).Scan(&spid, &marked); err != nil {
		return res, err
	}
	if marked < 0 {
		return res, fmt.Errorf("marking the task's transaction: sp_getapplock returned %d", marked)
	}
	res.SessionID = fmt.Sprint(spid)
	msgs := &sqlrun.Messages{}
	capture := resultset.FromContext(ctx)
	res.RowsAffected, res.BodyErr = runBody(ctx, conn, runs, msgs, capture)
	res.Messages, res.Results = msgs.String(), capture.Encoded()

	dctx, cancel := queue.Detached(ctx)
	defer cancel()
	if res.BodyErr == nil {
		res.BodyErr = s.restoreSession(dctx, conn, mark, name)
		if errors.As(res.BodyErr, new(impersonatingError)) {
			_ = rollback(dctx, conn)
			return res, nil // the session is ended, not pooled
		}
	}
	if res.BodyErr != nil {
		res.RowsAffected = 0 // rolled back
		clean = ctx.Err() == nil && s.rollbackAndRestore(dctx, conn) == nil
		return res, nil
	}

	var lost bool
	if err := conn.QueryRowContext(dctx, markCommittedBatch.text,
		sql.Named("id", a.TaskID), sql.Named("token", a.Token)).Scan(&lost); err != nil {
		return res, err // the session closes unclean: the server rolls back what it holds
	}
	if lost {
		clean = true                   // the batch rolled back
		return res, queue.ErrLeaseLost // the body's effect must not commit
	}
	clean = true
	res.Committed = true
	return res, nil
}

// markCommittedBatch ends the body's transaction: it writes the lease token
// into the task's own committed_token and commits, or rolls everything back
// when the lease is not current (the row is gone from under the lease:
// reclaimed, cancelled, finished), in one round trip. The transaction locks
// the task's own row and nothing else another task's end takes, so a node
// that stalls before this batch arrives blocks no other finish; the attempt
// is recorded after, by an ordinary finish, and finishCore records it as
// succeeded however it ends (queue.TxResult, migration 000002's header).
var markCommittedBatch = query{
	name: "mark-committed",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
UPDATE dbo.readpast_tasks
SET committed_token = @token
WHERE id = @id AND lease_token = @token AND state = 'running';
IF @@ROWCOUNT = 0
BEGIN
    ROLLBACK TRAN;
    SELECT CAST(1 AS bit);
    RETURN;
END;
COMMIT TRAN;
SELECT CAST(0 AS bit);`,
	params: []string{"id", "token"},
}

// runBody runs the batches in order on conn, each as many times as its
// "GO n" says, and stops after the first that raised an error.
func runBody(ctx context.Context, conn *sql.Conn, runs []sqlscript.Run, msgs *sqlrun.Messages, capture *resultset.Capture) (int64, error) {
	var rows int64
	for _, r := range runs {
		n, err := sqlrun.RunMSSQLCapturing(ctx, conn, r.Text, msgs, capture)
		rows += n
		if err != nil {
			if len(runs) > 1 {
				err = fmt.Errorf("%s: %w", r.Label, err)
			}
			return rows, err
		}
	}
	return rows, nil
}

// rollback rolls back whatever transaction the session has.
func rollback(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, "IF @@TRANCOUNT > 0 ROLLBACK TRAN;")
	return err
}

// releaseTxConn resets a clean session at once and returns it to the pool, or
// closes it: the server then ends the session, rolling back what it held.
func (s *Store) releaseTxConn(conn *sql.Conn, clean bool) {
	if clean {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		clean = sqlrun.ResetMSSQL(ctx, conn) == nil
	}
	if !clean {
		discard(conn)
		return
	}
	_ = conn.Close()
}

// compile-time check that *sql.Conn satisfies querier.
var _ querier = (*sql.Conn)(nil)
