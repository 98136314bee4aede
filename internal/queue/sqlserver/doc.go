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
//  1. readpast_queues rows (claim of a capped queue; enqueue, new names only)
//  2. readpast_chains rows (enqueue, finish, reclaim, cancel, retry)
//  3. readpast_tasks rows: the task itself, then the pending tasks of its chain
//  4. readpast_groups rows (finish decrements; enqueue, new names only)
//  5. inserts into readpast_attempts and readpast_audit (new keys: nobody waits)
//
// Finish, release and reclaim end one attempt per transaction, so each holds
// at most one chain row and one group row. A claimer waits only at step 1,
// before it holds anything; after that it takes group rows, then the task rows
// it claims, both WITH (UPDLOCK, READPAST): it skips whatever is locked instead
// of waiting, so although it takes groups before tasks it cannot close a cycle,
// and a finisher that waits on a group row a claimer holds only queues behind
// it. A heartbeat extends each lease in its own autocommitted statement, so it
// never holds one task while waiting for another.
//
// SQL Server can still pick a deadlock victim where the order is not fully ours
// (index maintenance on nonclustered keys, HOLDLOCK's range locks on a
// neighbouring key, a reader's key lookup at READ COMMITTED without
// READ_COMMITTED_SNAPSHOT). Claim, enqueue, finish, cancel, retry and the reads
// therefore run a victim (error 1205) again, up to twice, after a short
// jittered sleep: the victim's transaction was rolled back whole, so running it
// again is always safe. READ_COMMITTED_SNAPSHOT ON is recommended for the store
// database: dashboard reads then never wait for, or deadlock with, writers.
//
// # Hints and why
//
//   - Claim candidates are read WITH (READPAST, READCOMMITTEDLOCK) and keep no
//     lock; the rows actually claimed are then locked through a CTE
//     WITH (UPDLOCK, READPAST, ROWLOCK) and re-checked, so a claimer locks only
//     what it claims, skips what others hold, and never waits (SPEC §4.2).
//   - READPAST always comes with a locking read, so it also runs on a database
//     with READ_COMMITTED_SNAPSHOT ON (where SQL Server refuses a bare READPAST
//     at READ COMMITTED): UPDLOCK where we lock what we read, READCOMMITTEDLOCK
//     where we only read. READCOMMITTEDLOCK is never combined with ROWLOCK: the
//     two are in the same hint group, and SQL Server allows one per group.
//   - UPDLOCK on the queue row of a capped queue and on chain rows: these rows
//     serialise the transactions that must count or recompute under them.
//   - UPDLOCK, HOLDLOCK on the existence probe of a queue, group or chain name
//     that may be missing: the key-range lock makes a second enqueuer of the
//     same new name wait and then see it, instead of failing on the key.
//   - FORCESEEK where a join against a table variable drives a read or update
//     of a shared table, so the plan cannot scan (and lock) rows it does not use.
//   - ROWLOCK on writes to readpast_tasks, and the table's lock escalation is
//     disabled: READPAST skips row locks only, never page or table locks.
//   - No NOLOCK anywhere: no admission decision ever reads uncommitted data.
package sqlserver
