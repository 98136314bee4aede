-- A group's or a schedule's tasks of one state (docs/BENCHMARKS.md, "The
-- dashboard against history").
--
-- readpast_tasks_group was (group_name, id) and readpast_tasks_schedule
-- (schedule_name, id): a page of a group's pending tasks, or a schedule's
-- failed runs, sought the group's or the schedule's tasks newest first and
-- filtered the state, so with few matches it read their whole history (a
-- schedule that fires every minute makes 43,000 tasks a month). With the state
-- before the id, each state is one range in id order; a page of one state
-- seeks its range, and a page of every state merges the newest rows of one
-- range per state (listTasksByStateQuery), as the log's page of a queue does
-- since migration 000013.
--
-- The cost: a claim or a finish of a grouped or scheduled task now moves its
-- entry in that index too, since the state is a key column; the index count
-- per task stays the same.
--
-- The new indexes are built first, under new names: each build reads the
-- table once and holds a shared lock on it until it ends (ONLINE = ON is an
-- Enterprise feature), so enqueues, claims and finishes wait while the
-- dashboard still reads. Only the DROPs at the end take a schema-modification
-- lock, until the COMMIT right after. On a large table, run the migration when
-- the queues are quiet.

-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (queue.MigrateUp).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

CREATE INDEX readpast_tasks_group_state ON dbo.readpast_tasks (group_name, state, id) WHERE group_name IS NOT NULL;
CREATE INDEX readpast_tasks_schedule_state ON dbo.readpast_tasks (schedule_name, state, id) WHERE schedule_name IS NOT NULL;
DROP INDEX readpast_tasks_group ON dbo.readpast_tasks;
DROP INDEX readpast_tasks_schedule ON dbo.readpast_tasks;

COMMIT TRANSACTION;
