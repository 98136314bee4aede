-- Result output (docs/QUEUE.md, "Result output"): a queue's result_rows says
-- how many rows of its result sets an attempt keeps (0, the default: none),
-- and readpast_results holds what each attempt kept, one row per attempt
-- that kept any, written in the transaction that ends the attempt. It is a
-- table of its own, not a column of readpast_attempts, so no read of the
-- execution log carries it; it goes with its task (retention's purge of
-- finished tasks, a task's delete).
--
-- What it holds: adding a NOT NULL column with a constant default is a
-- metadata change (the default is kept in the catalog, not written to each
-- row), but it takes a schema-modification lock on readpast_queues until the
-- commit, so the settings reads of the nodes wait for this short file.
-- Lock escalation is disabled on the new table as on readpast_attempts: a
-- purge's batch never escalates to a table lock the finishes would wait for.

-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error (migrations.Up).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

ALTER TABLE dbo.readpast_queues ADD result_rows int NOT NULL
    CONSTRAINT readpast_queues_result_rows_df DEFAULT 0;

CREATE TABLE dbo.readpast_results (
    task_id bigint NOT NULL,
    attempt int NOT NULL,
    results nvarchar(max) NOT NULL,
    CONSTRAINT readpast_results_pk PRIMARY KEY CLUSTERED (task_id, attempt)
);
ALTER TABLE dbo.readpast_results SET (LOCK_ESCALATION = DISABLE);

COMMIT TRANSACTION;
