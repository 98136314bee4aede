-- A transactional task's transaction holds nothing that another task's
-- completion needs (docs/RELIABILITY.md, "A stalled node").
--
-- Its completion ran inside the body's transaction, which held the task's
-- counts and throughput rows (UPDLOCK, SERIALIZABLE) until the node's COMMIT
-- batch arrived: a node that froze or lost its network in between stopped
-- every finish of the queue, and SQL Server has no idle-in-transaction
-- timeout to end that session. Now the body's transaction ends with one batch
-- that writes the lease token into the task's own committed_token and
-- commits (transactional.go, markCommittedBatch); the attempt is then
-- recorded as succeeded by an ordinary finish, whose batch never waits for
-- the node. finishCore records an attempt whose body committed as succeeded
-- however it was ended (the finish, a release at shutdown, the reclaim of an
-- expired lease), so a committed body never runs again; while the mark's
-- transaction is open the task row is locked, and a reclaim waits for it.

-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (migrations.Up).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

ALTER TABLE dbo.readpast_tasks ADD committed_token bigint NULL; -- the lease under which the body committed

COMMIT TRANSACTION;
