-- The execution log filtered by queue and outcome (docs/BENCHMARKS.md, "The
-- dashboard against history").
--
-- The log had (queue, id) and (outcome, id): a page of one queue's attempts
-- of one outcome sought one of them and filtered the other column, so a
-- queue with few attempts of that outcome read the outcome's whole history.
-- (queue, outcome, id) holds each queue's attempts of each outcome as one
-- range in id order; it replaces (queue, id), and a page of one queue merges
-- the newest rows of one range per outcome (attemptsOfQueueQuery), as
-- PostgreSQL's does since its migration 000008. The index count per log row
-- stays four.
--
-- The build reads the log once and holds a shared lock on it until it ends
-- (ONLINE = ON is an Enterprise feature): finishes, which write log rows, wait
-- for it as long as one read of the whole log takes. Run the migration when
-- the queues are quiet.

-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (queue.MigrateUp).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

CREATE INDEX readpast_attempts_list ON dbo.readpast_attempts (queue, outcome, id);
DROP INDEX readpast_attempts_queue ON dbo.readpast_attempts;

COMMIT TRANSACTION;
