-- Back to one row per key: each key's stripes are summed into one row.

-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (migrations.Up).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

DECLARE @counts TABLE (queue nvarchar(64) NOT NULL, state varchar(10) NOT NULL, n bigint NOT NULL);
INSERT INTO @counts (queue, state, n)
SELECT queue, state, SUM(n) FROM dbo.readpast_counts GROUP BY queue, state;
DELETE FROM dbo.readpast_counts;

DECLARE @throughput TABLE (span varchar(6) NOT NULL, bucket datetime2(0) NOT NULL, queue nvarchar(64) NOT NULL,
                           outcome varchar(10) NOT NULL, n bigint NOT NULL, busy_ms bigint NOT NULL);
INSERT INTO @throughput (span, bucket, queue, outcome, n, busy_ms)
SELECT span, bucket, queue, outcome, SUM(n), SUM(busy_ms)
FROM dbo.readpast_throughput GROUP BY span, bucket, queue, outcome;
DELETE FROM dbo.readpast_throughput;

ALTER TABLE dbo.readpast_counts DROP CONSTRAINT readpast_counts_pk;
ALTER TABLE dbo.readpast_throughput DROP CONSTRAINT readpast_throughput_pk;

-- SQL Server refuses to drop a column while a default constraint names it.
-- (Babelfish names its defaults its own way, not as objects of this name, and
-- drops a column's default with the column.)
IF OBJECT_ID(N'dbo.readpast_counts_stripe_df', N'D') IS NOT NULL
    ALTER TABLE dbo.readpast_counts DROP CONSTRAINT readpast_counts_stripe_df;
IF OBJECT_ID(N'dbo.readpast_throughput_stripe_df', N'D') IS NOT NULL
    ALTER TABLE dbo.readpast_throughput DROP CONSTRAINT readpast_throughput_stripe_df;
ALTER TABLE dbo.readpast_counts DROP COLUMN stripe;
ALTER TABLE dbo.readpast_throughput DROP COLUMN stripe;

ALTER TABLE dbo.readpast_counts ADD CONSTRAINT readpast_counts_pk PRIMARY KEY (queue, state);
ALTER TABLE dbo.readpast_throughput ADD CONSTRAINT readpast_throughput_pk PRIMARY KEY (span, bucket, queue, outcome);

INSERT INTO dbo.readpast_counts (queue, state, n) SELECT queue, state, n FROM @counts;
INSERT INTO dbo.readpast_throughput (span, bucket, queue, outcome, n, busy_ms)
SELECT span, bucket, queue, outcome, n, busy_ms FROM @throughput;

COMMIT TRANSACTION;
