package queuetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// txProbe is one transactional task: enqueued on a queue of its own, claimed,
// then run by RunTransactional.
type txProbe struct {
	task *queue.Task
	res  queue.TxResult
	err  error
}

// runTx enqueues body as a transactional task on queue q and runs it.
func runTx(t *testing.T, b bundle, ctx context.Context, q, body string) txProbe {
	t.Helper()
	b.enqueue(t, queue.NewTask{Body: body, Queue: q, Transactional: true, MaxAttempts: 1})
	got := b.claim(t, q, 1)
	require.Len(t, got, 1)
	res, err := b.runTransactional(t, ctx, got[0], body)
	return txProbe{task: got[0], res: res, err: err}
}

// runTransactional runs body as task's transactional attempt and, when the
// body committed without its end (queue.TxResult.Recorded), records the end
// as the workers do: an ordinary Finish of a succeeded attempt, whose result
// becomes res.Finish.
func (b bundle) runTransactional(t *testing.T, ctx context.Context, task *queue.Task, body string) (queue.TxResult, error) {
	t.Helper()
	res, err := b.s.RunTransactional(ctx, attempt(task, queue.OutcomeSucceeded, ""), body)
	if err != nil || !res.Committed || res.Recorded {
		return res, err
	}
	a := attempt(task, queue.OutcomeSucceeded, "")
	a.SessionID, a.RowsAffected, a.Messages, a.Results = res.SessionID, res.RowsAffected, res.Messages, res.Results
	fin, err := b.s.Finish(ctx, []queue.Attempt{a})
	require.NoError(t, err, "recording the committed attempt of task %d", task.ID)
	require.Len(t, fin, 1)
	res.Finish = fin[0]
	return res, fin[0].Err
}

// requireNothingRecorded checks that a rolled-back run left the task as it
// was claimed: running under its lease, with no attempt logged.
func requireNothingRecorded(t *testing.T, b bundle, p txProbe) {
	t.Helper()
	task := b.get(t, p.task.ID)
	require.Equal(t, queue.StateRunning, task.State, "nothing was recorded: the caller records the attempt")
	require.Equal(t, p.task.LeaseToken, task.LeaseToken)
	recs, err := b.s.TaskAttempts(b.ctx, p.task.ID)
	require.NoError(t, err)
	require.Empty(t, recs)
}

// notice is a statement that sends msg as a server message on the dialect, or
// "" where there are none.
func notice(d testenv.Dialect, msg string) string {
	switch d {
	case testenv.Postgres:
		return "DO $$ BEGIN RAISE NOTICE '" + msg + "'; END $$"
	case testenv.SQLServer:
		return "PRINT '" + msg + "';"
	}
	return ""
}

// effects counts the rows of the tests' effect table.
func effects(t *testing.T, b bundle, tag string) int64 {
	t.Helper()
	return b.env.QueryInt(t, "SELECT count(*) FROM fx WHERE tag = '"+tag+"'")
}

var transactionalTests = map[string]func(*testing.T, Harness){
	"effect_and_completion_commit_together": func(t *testing.T, h Harness) {
		b := setup(t, h)
		body := "CREATE TABLE tx_probe (n int)\nGO\nINSERT INTO tx_probe VALUES (1)"
		if n := notice(h.Dialect, "hello"); n != "" {
			body += "\nGO\n" + n
		}
		p := runTx(t, b, b.ctx, "tx", body)
		require.NoError(t, p.err)
		require.NoError(t, p.res.BodyErr)
		require.True(t, p.res.Committed)
		require.Equal(t, queue.StateSucceeded, p.res.Finish.State)
		recs, err := b.s.TaskAttempts(b.ctx, p.task.ID)
		require.NoError(t, err)
		require.Len(t, recs, 1)
		r := recs[0]
		require.Equal(t, queue.OutcomeSucceeded, r.Outcome)
		require.Equal(t, int64(1), r.RowsAffected, "rows affected by the body are recorded")
		require.False(t, r.FinishedAt.IsZero())
		if h.Dialect != testenv.SQLite {
			require.NotEmpty(t, r.SessionID, "the session the body ran on is recorded")
			require.Equal(t, p.res.SessionID, r.SessionID)
			require.Contains(t, r.Messages, "hello", "the body's messages are recorded like the ordinary path's")
		}
		require.Equal(t, int64(1), b.env.QueryInt(t, "SELECT count(*) FROM tx_probe"))
	},
	"body_runs_exactly_as_written": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.env.Exec(t, "CREATE TABLE ex (id int, note varchar(100))")
		b.env.Exec(t, "INSERT INTO ex VALUES (345, 'a')")
		b.env.Exec(t, "INSERT INTO ex VALUES (12345, 'b')")
		ident := `"it's"`
		if h.Dialect != testenv.Postgres {
			ident = "[it's]"
		}
		// sqlcmd's rules, the same splitter as the ordinary path: a backslash
		// at a line's end in a string of a later batch, a quote in an
		// identifier, "GO 2", CRLF line ends.
		p := runTx(t, b, b.ctx, "tx", "UPDATE ex SET note = note WHERE id = 0;\r\nGO\r\nUPDATE ex SET note = 'C:\\dir\\\r\n' WHERE id = 12345\r\nGO\r\n"+
			"CREATE TABLE "+ident+" (n int)\r\nGO\r\nINSERT INTO "+ident+" VALUES (1)\r\nGO 2\r\n")
		require.NoError(t, p.err)
		require.NoError(t, p.res.BodyErr)
		require.True(t, p.res.Committed)
		require.Equal(t, int64(3), p.res.RowsAffected, "one update and two inserts")
		require.Equal(t, int64(1), b.env.QueryInt(t, "SELECT count(*) FROM ex WHERE id = 345 AND note = 'a'"), "row 345 untouched")
		require.Equal(t, int64(0), b.env.QueryInt(t, "SELECT count(*) FROM ex WHERE id = 12345 AND note = 'b'"), "row 12345 written")
		require.Equal(t, int64(2), b.env.QueryInt(t, "SELECT count(*) FROM "+ident))
	},
	"failed_body_rolls_back_and_records_nothing": func(t *testing.T, h Harness) {
		b := setup(t, h)
		p := runTx(t, b, b.ctx, "tx", "CREATE TABLE tx_half (n int)\nGO\nINSERT INTO no_such_table VALUES (1)")
		require.NoError(t, p.err)
		require.False(t, p.res.Committed)
		require.ErrorContains(t, p.res.BodyErr, "batch 2 of 2")
		requireNothingRecorded(t, b, p)
		// The caller records it like any attempt.
		require.Equal(t, queue.StateFailed, b.finish(t, p.task, queue.OutcomeFailed, p.res.BodyErr.Error()).State)
		p = runTx(t, b, b.ctx, "tx2", "CREATE TABLE tx_half (n int)")
		require.NoError(t, p.err)
		require.True(t, p.res.Committed, "the failed body's first batch must have been rolled back: %v", p.res.BodyErr)
	},
	"stopped_body_rolls_back_and_records_nothing": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.env.SkipOnBabelfish(t, testenv.BabelfishAttention)
		b.env.Exec(t, "CREATE TABLE fx (tag varchar(40))")
		ctx, cancel := context.WithTimeout(b.ctx, time.Second)
		defer cancel()
		start := time.Now()
		p := runTx(t, b, ctx, "tx", "INSERT INTO fx VALUES ('stopped')\nGO\n"+testenv.SleepBody(t, h.Dialect, time.Minute))
		require.Less(t, time.Since(start), 10*time.Second, "the body stops soon after its deadline")
		require.NoError(t, p.err)
		require.False(t, p.res.Committed)
		require.ErrorIs(t, p.res.BodyErr, context.DeadlineExceeded, "the body's error is its context's end")
		requireNothingRecorded(t, b, p)
		require.Zero(t, effects(t, b, "stopped"), "the stopped body's effect is rolled back")
	},
	// A body that committed is never run again, whatever ends its attempt:
	// on stores that record the end after the commit (queue.TxResult), a
	// release at shutdown, the reclaim of its expired lease and an operator's
	// cancel all record it as succeeded, with one log row that says so.
	"committed_body_is_never_run_again": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.env.Exec(t, "CREATE TABLE fx (tag varchar(40))")
		for _, end := range []string{"release", "reclaim", "cancel"} {
			q := "committed-" + end
			id := b.enqueue(t, queue.NewTask{Body: "x", Queue: q, Transactional: true, MaxAttempts: 3})[0]
			lease := time.Minute
			if end == "reclaim" {
				lease = 300 * time.Millisecond
			}
			got, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: q, Owner: "gone/w1", Limit: 1, LeaseDuration: lease})
			require.NoError(t, err)
			require.Len(t, got, 1)
			res, err := b.s.RunTransactional(b.ctx, attempt(got[0], queue.OutcomeSucceeded, ""), "INSERT INTO fx VALUES ('"+q+"')")
			require.NoError(t, err)
			require.True(t, res.Committed, "%s: %v", end, res.BodyErr)
			if res.Recorded {
				require.Equal(t, queue.StateSucceeded, res.Finish.State, "%s: the end committed with the body", end)
				continue
			}
			require.Equal(t, queue.StateRunning, b.get(t, id).State, "%s: the end is the caller's to record", end)
			switch end {
			case "release":
				r, err := b.s.Release(b.ctx, []queue.Attempt{attempt(got[0], queue.OutcomeCancelled, "released at shutdown")})
				require.NoError(t, err)
				require.Equal(t, queue.StateSucceeded, r[0].State, "a release must not run a committed body again")
			case "reclaim":
				time.Sleep(600 * time.Millisecond)
				var states []queue.State
				for _, r := range mustReclaim(t, b) {
					if r.TaskID == id {
						states = append(states, r.State)
					}
				}
				require.Equal(t, []queue.State{queue.StateSucceeded}, states, "the reclaim of its lease records the committed body's success")
			case "cancel":
				_, err := b.s.Cancel(b.ctx, id, "ann")
				require.NoError(t, err)
				r, err := b.s.Finish(b.ctx, []queue.Attempt{attempt(got[0], queue.OutcomeCancelled, "cancelled by ann")})
				require.NoError(t, err)
				require.Equal(t, queue.StateSucceeded, r[0].State, "a cancel that came after the commit cannot undo it")
			}
			task := b.get(t, id)
			require.Equal(t, queue.StateSucceeded, task.State, end)
			recs, err := b.s.TaskAttempts(b.ctx, id)
			require.NoError(t, err)
			require.Len(t, recs, 1, end)
			require.Equal(t, queue.OutcomeSucceeded, recs[0].Outcome, end)
			require.Contains(t, recs[0].Error, "its body had committed", "%s: the log row says why it succeeded", end)
			require.Equal(t, int64(1), effects(t, b, q), end)
			require.Empty(t, b.claim(t, q, 1), "%s: nothing runs again", end)
		}
	},
	"lost_lease_rolls_back": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.env.Exec(t, "CREATE TABLE fx (tag varchar(40))")
		b.enqueue(t, queue.NewTask{Body: "x", Queue: "tx2", Transactional: true})
		old, err := b.s.Claim(b.ctx, queue.ClaimParams{Queue: "tx2", Owner: "dead", Limit: 1, LeaseDuration: 100 * time.Millisecond})
		require.NoError(t, err)
		time.Sleep(400 * time.Millisecond)
		require.Len(t, mustReclaim(t, b), 1)
		_, err = b.s.RunTransactional(b.ctx, attempt(old[0], queue.OutcomeSucceeded, ""), "INSERT INTO fx VALUES ('lost')")
		require.ErrorIs(t, err, queue.ErrLeaseLost)
		require.Zero(t, effects(t, b, "lost"), "the fenced-off body must not have committed")
	},
	"hostile_bodies_are_restored_or_refused": func(t *testing.T, h Harness) {
		b := setup(t, h)
		b.env.Exec(t, "CREATE TABLE fx (tag varchar(40))")
		restored, refused := hostileBodies(t, b)
		for i, body := range restored {
			tag := fmt.Sprintf("ok%d", i)
			p := runTx(t, b, b.ctx, "ok"+fmt.Sprint(i), "INSERT INTO fx VALUES ('"+tag+"')\nGO\n"+body)
			require.NoError(t, p.err, "%q", body)
			require.NoError(t, p.res.BodyErr, "the store restores what %q changed, and completes", body)
			require.True(t, p.res.Committed, "%q", body)
			require.Equal(t, queue.StateSucceeded, b.get(t, p.task.ID).State, "%q", body)
			require.Equal(t, int64(1), effects(t, b, tag), "%q", body)
		}
		for i, c := range refused {
			tag := fmt.Sprintf("no%d", i)
			p := runTx(t, b, b.ctx, "no"+fmt.Sprint(i), "INSERT INTO fx VALUES ('"+tag+"')\nGO\n"+c.body)
			require.NoError(t, p.err, "%q", c.body)
			require.False(t, p.res.Committed, "%q must not complete", c.body)
			require.ErrorContains(t, p.res.BodyErr, c.says, "the error says what %q did", c.body)
			requireNothingRecorded(t, b, p)
			if !c.committedItself {
				require.Zero(t, effects(t, b, tag), "%q was rolled back", c.body)
			}
			b.finish(t, p.task, queue.OutcomeFailed, p.res.BodyErr.Error()) // as the worker records it
		}
		// The store's own sessions were not touched: the shared path works.
		b.enqueue(t, queue.NewTask{Body: "SELECT 1", Queue: "after", Chain: "after", Stage: 0},
			queue.NewTask{Body: "SELECT 1", Queue: "after", Chain: "after", Stage: 1})
		got := b.claim(t, "after", 10)
		require.Len(t, got, 1)
		require.Equal(t, queue.StateSucceeded, b.finish(t, got[0], queue.OutcomeSucceeded, "").State)
		require.Len(t, b.claim(t, "after", 10), 1)
	},
	"rowcount_cannot_cut_the_chain_refresh": func(t *testing.T, h Harness) {
		b := setup(t, h)
		if h.Dialect != testenv.SQLServer {
			t.Skip("SET ROWCOUNT is T-SQL's")
		}
		want := b.enqueue(t, queue.NewTask{Body: "SET ROWCOUNT 1;", Queue: "rc", Chain: "rc", Stage: 0, Transactional: true},
			queue.NewTask{Body: "SELECT 1", Queue: "rc", Chain: "rc", Stage: 1},
			queue.NewTask{Body: "SELECT 1", Queue: "rc", Chain: "rc", Stage: 1},
			queue.NewTask{Body: "SELECT 1", Queue: "rc", Chain: "rc", Stage: 1})
		got := b.claim(t, "rc", 10)
		require.Equal(t, []int64{want[0]}, ids(got))
		res, err := b.runTransactional(t, b.ctx, got[0], "SET ROWCOUNT 1;")
		require.NoError(t, err)
		require.True(t, res.Committed, "%v", res.BodyErr)
		require.Len(t, b.claim(t, "rc", 10), 3, "every task of the next stage is open, not ROWCOUNT of them")
	},
}

// refusedBody is a body the store must not complete, and what its error says.
type refusedBody struct {
	body, says      string
	committedItself bool // the body's own COMMIT made its earlier work permanent
}

// hostileBodies lists, for the dialect, bodies that change their session in
// ways the store restores before the completion, and bodies that leave it in
// a state no completion may run in.
func hostileBodies(t *testing.T, b bundle) (restored []string, refused []refusedBody) {
	ended := "ended the task's transaction"
	another := "began another"
	switch b.env.Dialect {
	case testenv.SQLServer:
		restored = []string{
			"USE master;",
			"SET QUOTED_IDENTIFIER OFF;",
			"SET ANSI_WARNINGS OFF;",
			"SET ANSI_NULLS OFF; SET CONCAT_NULL_YIELDS_NULL OFF; SET ARITHABORT OFF; SET NUMERIC_ROUNDABORT ON;",
			"SET LOCK_TIMEOUT 0;",
			"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE;", // refused by Babelfish: dropped there below
			"SET TRANSACTION ISOLATION LEVEL SNAPSHOT;",     // the same
			"SET DEADLOCK_PRIORITY LOW;",
			"SET XACT_ABORT OFF; SET IMPLICIT_TRANSACTIONS ON;",
			"SET NOEXEC ON;",
		}
		refused = []refusedBody{
			{body: "SET XACT_ABORT ON;\nBEGIN TRY\n    SELECT CAST('x' AS int);\nEND TRY\nBEGIN CATCH\n    PRINT 'caught';\nEND CATCH;",
				says: "uncommittable"},
			{body: "COMMIT TRAN;", says: ended, committedItself: true},
			{body: "ROLLBACK TRAN;", says: ended},
			{body: "COMMIT TRAN;\nBEGIN TRAN;", says: another, committedItself: true},
			{body: "BEGIN TRAN;", says: "@@TRANCOUNT at 2"},
			{body: "SET SHOWPLAN_XML ON;", says: "SHOWPLAN"},
		}
	case testenv.Postgres:
		role := "readpast_nobody_" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_"))
		role = role[:min(len(role), 60)]
		b.env.Exec(t, fmt.Sprintf(`DO $$ BEGIN CREATE ROLE %s NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`, role))
		restored = []string{
			"SET ROLE " + role,
			"SET search_path = pg_catalog",
			"SET LOCAL statement_timeout = 1; SET LOCAL lock_timeout = 1",
			"SET session_replication_role = replica; SET synchronous_commit = off",
			"CREATE TEMP TABLE readpast_tasks (id bigint, state text, lease_token bigint)",
		}
		refused = []refusedBody{
			{body: "COMMIT", says: ended, committedItself: true},
			{body: "ROLLBACK", says: ended},
			{body: "COMMIT; BEGIN", says: another, committedItself: true},
			{body: "SET TRANSACTION READ ONLY", says: "read-only"},
		}
	default:
		restored = []string{
			"PRAGMA query_only = 1",
			"PRAGMA ignore_check_constraints = 1; PRAGMA recursive_triggers = 1",
		}
		refused = []refusedBody{
			{body: "COMMIT", says: ended, committedItself: true},
			{body: "ROLLBACK", says: ended},
			{body: "COMMIT; BEGIN", says: ended, committedItself: true},
			{body: "CREATE TEMP TABLE readpast_tasks (id integer)", says: "named like the store's tables"},
		}
	}
	if b.env.Dialect == testenv.SQLServer && testenv.IsBabelfish(t, b.env.DSN) {
		// Babelfish refuses the statement itself, so the body fails before
		// there is anything to restore.
		restored = slices.DeleteFunc(restored, func(body string) bool { return strings.Contains(body, "ISOLATION LEVEL S") })
		// Nor does it catch the conversion error (testenv.BabelfishTryCatch):
		// the body fails, but not by dooming its transaction.
		refused = slices.DeleteFunc(refused, func(r refusedBody) bool { return strings.Contains(r.body, "BEGIN TRY") })
		// And SHOWPLAN_XML changes nothing there (testenv.BabelfishShowplan).
		refused = slices.DeleteFunc(refused, func(r refusedBody) bool { return strings.Contains(r.body, "SHOWPLAN") })
	}
	return restored, refused
}
