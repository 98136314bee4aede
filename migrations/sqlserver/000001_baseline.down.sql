-- Removes every ReadPast table (migrate down); golang-migrate's version table stays.

-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (migrations.Up).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

DROP TABLE dbo.readpast_schedules;
DROP TABLE dbo.readpast_throughput;
DROP TABLE dbo.readpast_counts;
DROP TABLE dbo.readpast_audit;
DROP TABLE dbo.readpast_nodes;
DROP TABLE dbo.readpast_attempts;
DROP TABLE dbo.readpast_tasks;
DROP TABLE dbo.readpast_chains;
DROP TABLE dbo.readpast_groups;
DROP TABLE dbo.readpast_queues;

COMMIT TRANSACTION;
