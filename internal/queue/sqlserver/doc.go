// Package sqlserver is the SQL Server dialect of the ReadPast queue store
// (docs/QUEUE.md), built on database/sql and github.com/microsoft/go-mssqldb.
//
// Every operation is one parameterised T-SQL batch sent from Go (the sql_*.go
// files hold them as constants); nothing lives in stored procedures, so the
// schema stays one golang-migrate file and a DBA can read every statement here.
// The batches need SQL Server 2016 or later at database compatibility level 130+
// (OPENJSON, DATEDIFF_BIG); Migrate checks the level before it creates anything.
// Times are datetime2(6) UTC from the database clock (SYSUTCDATETIME()).
//
// # Lock order
//
// Every transaction that may wait for a lock takes its locks in this order, so
// two of them can queue behind each other but never wait in a cycle:
//
//  1. readpast_queues rows (claim of a capped queue)
//  2. readpast_chains rows (enqueue, finish, reclaim, cancel, retry)
//  3. readpast_tasks rows, by primary key: the task itself, then the tasks of
//     its chain (read through the chain index, changed by primary key)
//  4. readpast_groups rows (finish decrements)
//  5. readpast_counts and readpast_throughput rows (the rollups), of one
//     stripe: a finish's task's, a batch's session's (sql_rollups.go)
//  6. inserts into readpast_attempts and readpast_audit (new keys: nobody waits)
//  7. the run row of a job step's task, then the next step's new task
//     (sql_jobs_step.go)
//  8. inserts into readpast_alert_events (new keys: nobody waits)
//
// New queue, group and chain names are inserted by enqueue in a short
// transaction of their own, before the one that writes the tasks, with plain
// inserts that take no key-range lock. Finish, release and reclaim end one
// attempt per transaction, so each holds at most one chain row and one group
// row. A claimer waits only at step 1, before it holds anything; after that it
// takes the group rows of the tasks it may admit, then the task rows it
// claims, both WITH (UPDLOCK, READPAST): it skips whatever is locked instead of
// waiting, so although it takes groups before tasks it cannot close a cycle,
// and a finisher that waits on a group row a claimer holds only queues behind
// it. A heartbeat extends each lease in its own autocommitted statement, so it
// never holds one task while waiting for another.
//
// SQL Server can still pick a deadlock victim where the order is not fully ours
// (index maintenance on nonclustered keys, a reader's key lookup at READ
// COMMITTED without READ_COMMITTED_SNAPSHOT). Claim, enqueue, finish, cancel,
// retry, purge and the reads therefore run a victim (error 1205) again, up to
// twice, after a short jittered sleep: the victim's transaction was rolled back
// whole, so running it again is always safe. READ_COMMITTED_SNAPSHOT ON is
// recommended for the store database: dashboard reads then never wait for, or
// deadlock with, writers.
//
// # Hints and why
//
//   - The claim reads the rows it takes in claim order WITH (UPDLOCK, READPAST,
//     ROWLOCK), which locks them and skips rows others hold, then updates them
//     by primary key; the plan and the group counters are read WITH (READPAST,
//     READCOMMITTEDLOCK) and keep no lock. So a claimer locks only what it
//     claims and the groups it admits from, and never waits (SPEC §4.2).
//   - READPAST always comes with a locking read, so it also runs on a database
//     with READ_COMMITTED_SNAPSHOT ON (where SQL Server refuses a bare READPAST
//     at READ COMMITTED, Microsoft's "Table hints"): UPDLOCK where we lock what
//     we read, READCOMMITTEDLOCK where we only read. READCOMMITTEDLOCK is never
//     combined with ROWLOCK: the two are in the same hint group, and SQL Server
//     allows one per group.
//   - A locking read that should lock the row the way writers find it (by
//     clustered key) names a column its index does not cover, so its plan
//     looks the row up and the lock hint reaches the clustered key as well
//     ("Lock hints … may place locks on index keys rather than the actual data
//     rows").
//   - UPDLOCK on the queue row of a capped queue and on chain rows: these rows
//     serialise the transactions that must count or recompute under them.
//   - UPDLOCK, SERIALIZABLE on the rollup upserts only: a missing rollup key is
//     range-locked so two finishers cannot both insert it; claimers never touch
//     those tables. The rows are striped (16 a key, summed by every reader), so
//     the finishes of one queue hold different rows to their commits instead
//     of each waiting for the one before (sql_rollups.go, "Stripes").
//   - FORCESEEK where a join against a table variable drives a read or update
//     of a shared table, so the plan cannot scan (and lock) rows it does not use.
//   - ROWLOCK on writes to readpast_tasks, and the table's lock escalation is
//     disabled (readpast_attempts' too): READPAST skips row locks only, never
//     page or table locks.
//   - Every batch begins SET TRANSACTION ISOLATION LEVEL READ COMMITTED
//     (readCommitted in query.go): the hints above are written for that
//     level, and a pooled session may come from a transactional body that
//     set another (sp_reset_connection does not reset the level; the reset
//     after a body sets it back too, sqlrun.ResetMSSQL).
//   - No NOLOCK anywhere: no admission decision ever reads uncommitted data.
//   - Every parameter is typed, NULLs included (query.go).
//
// # Forms Babelfish also accepts
//
// The batches avoid a CTE as the target of an UPDATE or DELETE (the seed's
// claim) and OUTPUT deleted.* in an UPDATE … FROM: Babelfish for PostgreSQL,
// the TDS server the suite runs on here, rejects the first and can return
// another row's values for the second. Each replacement is the same on SQL
// Server by Microsoft's documentation (a locking read then an update by key in
// one transaction; the old values read under the update lock before the
// update), and says so where it stands.
package sqlserver
