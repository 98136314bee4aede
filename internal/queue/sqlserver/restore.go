package sqlserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"readpast/internal/sqlrun"
)

// restoreOptions sets a session back to what the store's statements are
// written for, whatever a transactional body did to it (SET options last
// until the session ends or resets, and survive its batches; a body's SET is
// not undone by its ROLLBACK):
//
//   - NOEXEC, PARSEONLY and FMTONLY first: with any of them on, SQL Server
//     would compile and skip every statement after it, the completion
//     included, and report success. (SHOWPLAN_* must be alone in a batch, so
//     a body that left one on makes this batch fail, which fails the attempt
//     and ends the session.)
//   - STATISTICS XML and PROFILE: each adds a result set after every
//     statement, which the completion's read would take for its answer.
//   - The options a filtered index needs to be written (Microsoft: "CREATE
//     INDEX", required SET options): without them the completion's writes to
//     readpast_tasks fail with 1934.
//   - ROWCOUNT 0: with SET ROWCOUNT n, the chain failure policy would cancel
//     only n later stages.
//   - CONTEXT_INFO cleared: sp_reset_connection clears it on SQL Server,
//     Babelfish's reset does not, and a body's value must not reach the
//     next task.
//   - LOCK_TIMEOUT -1, DEADLOCK_PRIORITY NORMAL, READ COMMITTED: the lock
//     behaviour the store's lock order is written for (a body's SERIALIZABLE
//     would hold range locks, SNAPSHOT would refuse the writes).
//   - IDENTITY_INSERT OFF on each store table with an identity column: one
//     table per session may have it on, and with it on every insert that
//     does not name the id (the attempt's log row, an audit row) fails with
//     545. Setting it needs ALTER on the table (Microsoft: "SET
//     IDENTITY_INSERT"); a login without ALTER cannot have set it on either,
//     so the refusal is caught and ignored. XACT_ABORT is OFF around it, so
//     a caught error leaves the transaction committable.
//   - IMPLICIT_TRANSACTIONS OFF, XACT_ABORT ON, CURSOR_CLOSE_ON_COMMIT OFF.
//   - USE the store's database: after a body's USE the completion would name
//     another database's tables (208, or another store's).
func restoreOptions(database string) string {
	return `SET NOEXEC OFF;
SET PARSEONLY OFF;
SET FMTONLY OFF;
SET STATISTICS XML OFF;
SET STATISTICS PROFILE OFF;
SET ANSI_NULLS ON;
SET ANSI_PADDING ON;
SET ANSI_WARNINGS ON;
SET ARITHABORT ON;
SET CONCAT_NULL_YIELDS_NULL ON;
SET QUOTED_IDENTIFIER ON;
SET NUMERIC_ROUNDABORT OFF;
SET ROWCOUNT 0;
SET CONTEXT_INFO 0x;
SET LOCK_TIMEOUT -1;
SET DEADLOCK_PRIORITY NORMAL;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET IMPLICIT_TRANSACTIONS OFF;
SET XACT_ABORT OFF;
USE ` + quoteName(database) + `;
BEGIN TRY SET IDENTITY_INSERT dbo.readpast_tasks OFF; END TRY BEGIN CATCH END CATCH;
BEGIN TRY SET IDENTITY_INSERT dbo.readpast_attempts OFF; END TRY BEGIN CATCH END CATCH;
BEGIN TRY SET IDENTITY_INSERT dbo.readpast_audit OFF; END TRY BEGIN CATCH END CATCH;
BEGIN TRY SET IDENTITY_INSERT dbo.readpast_schedules OFF; END TRY BEGIN CATCH END CATCH;
BEGIN TRY SET IDENTITY_INSERT dbo.readpast_jobs OFF; END TRY BEGIN CATCH END CATCH;
BEGIN TRY SET IDENTITY_INSERT dbo.readpast_job_runs OFF; END TRY BEGIN CATCH END CATCH;
BEGIN TRY SET IDENTITY_INSERT dbo.readpast_alert_events OFF; END TRY BEGIN CATCH END CATCH;
BEGIN TRY SET IDENTITY_INSERT dbo.readpast_alert_deliveries OFF; END TRY BEGIN CATCH END CATCH;
BEGIN TRY SET IDENTITY_INSERT dbo.readpast_bulk_ops OFF; END TRY BEGIN CATCH END CATCH;
SET XACT_ABORT ON;
SET CURSOR_CLOSE_ON_COMMIT OFF;
`
}

// restoreBatch restores the session (restoreOptions) after a body that
// succeeded and reads what decides whether the completion may run: the
// transaction's state, its nesting, the task's mark, and who the session is
// (ORIGINAL_LOGIN() is the login that connected, SUSER_SNAME() the one in
// force: they differ after an EXECUTE AS the body did not REVERT). The
// session is named after the attempt again (beginTxBatch), since
// restoreOptions cleared whatever the body set: a node that stalls before
// its commit still holds the body's locks, and the reclaim finds the session
// by its name.
func restoreBatch(database, mark, name string) string {
	return restoreOptions(database) + `SET CONTEXT_INFO ` + sqlrun.MSSQLContextInfo(name) + `;
SELECT XACT_STATE(), @@TRANCOUNT, APPLOCK_MODE(N'public', N'` + mark + `', N'Transaction'),
       ORIGINAL_LOGIN(), SUSER_SNAME();`
}

// impersonatingError is restoreSession's answer when the body left an
// EXECUTE AS in force. The session is then ended rather than pooled: a reset
// does not undo every security context (an application role, EXECUTE AS ...
// WITH NO REVERT).
type impersonatingError struct{ login, current string }

func (e impersonatingError) Error() string {
	if e.current == "" {
		return "the body left the session running as another principal (EXECUTE AS without REVERT): ReadPast does not run as another principal, so the session was ended"
	}
	return fmt.Sprintf("the body left the session running as %s (EXECUTE AS without REVERT), not as %s, the login ReadPast connected with: ReadPast does not record a task as another principal, so everything the body did was rolled back (end the body with REVERT)", e.current, e.login)
}

// restoreSession runs restoreBatch and checks that the completion may run in
// the transaction: the one begun for the task (it holds mark), committable,
// not nested, as the login that connected. The error says what the body did.
func (s *Store) restoreSession(ctx context.Context, conn *sql.Conn, mark, name string) error {
	var (
		state, trancount int
		held             string
		login, current   string
	)
	err := conn.QueryRowContext(ctx, restoreBatch(s.database, mark, name)).Scan(&state, &trancount, &held, &login, &current)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return errors.New("after the body the session answered no rows: the body left SHOWPLAN, NOEXEC or a similar option on")
	case err != nil:
		return fmt.Errorf("restoring the session after the body failed (did it leave SHOWPLAN_XML or another option on?): %w", sqlrun.DescribeMSSQL(err))
	case login != current:
		return impersonatingError{login: login, current: current}
	case state == -1:
		return errors.New("the body's error left its transaction uncommittable (XACT_STATE() = -1), even if the body caught it: everything it did was rolled back")
	case trancount == 0 || state == 0:
		return errors.New("the body ended the task's transaction (COMMIT or ROLLBACK): a transactional task's body must leave that to ReadPast, which commits it with the completion")
	case held != "Exclusive":
		return errors.New("the body committed or rolled back the task's transaction and began another (COMMIT; BEGIN TRAN): what it did before that COMMIT is committed without the task's completion")
	case trancount > 1:
		return fmt.Errorf("the body left @@TRANCOUNT at %d (a BEGIN TRANSACTION without its COMMIT)", trancount)
	}
	return nil
}

// rollbackAndRestore rolls back whatever transaction the session has after a
// body that failed, and restores the session as after one that succeeded (a
// failed body's SET options, IDENTITY_INSERT and USE outlive its rollback).
// It fails, so that the session is ended rather than pooled, when the batch
// fails (a SHOWPLAN left on) or the body left an EXECUTE AS in force.
func (s *Store) rollbackAndRestore(ctx context.Context, conn *sql.Conn) error {
	var same bool
	err := conn.QueryRowContext(ctx, restoreOptions(s.database)+`IF @@TRANCOUNT > 0 ROLLBACK TRAN;
SELECT CAST(CASE WHEN ORIGINAL_LOGIN() = SUSER_SNAME() THEN 1 ELSE 0 END AS bit);`).Scan(&same)
	if err == nil && !same {
		err = impersonatingError{}
	}
	return err
}
