-- The rollup rows are striped (docs/SQLSERVER.md, "Rollup stripes";
-- internal/queue/sqlserver/sql_rollups.go). A finish adds to the counts row
-- and to the minute and hour throughput rows of its queue, and holds them
-- from its UPDATE to its COMMIT, through the log insert and the commit's log
-- flush: with one row per (queue, state) and per (bucket, queue, outcome),
-- one queue's finishes queued behind each other, at most one per log flush.
-- Each key now has up to 16 rows, one per stripe; a finish adds to the stripe
-- of its task id (id % 16), so finishes of consecutive tasks take different
-- rows, and every reader sums a key's stripes. Existing rows become stripe 0.
--
-- What it holds: both tables are small (a row per queue and final state, and
-- a row per bucket, queue and outcome for the buckets kept); the file is one
-- short transaction whose ALTERs hold a schema-modification lock on each
-- table until the commit, so finishes, cancels, retries, purges and the
-- dashboard's counts wait for it, for as long as rebuilding two small
-- clustered primary keys takes.

-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (migrations.Up).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

ALTER TABLE dbo.readpast_counts ADD stripe smallint NOT NULL
    CONSTRAINT readpast_counts_stripe_df DEFAULT 0;
ALTER TABLE dbo.readpast_counts DROP CONSTRAINT readpast_counts_pk;

ALTER TABLE dbo.readpast_throughput ADD stripe smallint NOT NULL
    CONSTRAINT readpast_throughput_stripe_df DEFAULT 0;
ALTER TABLE dbo.readpast_throughput DROP CONSTRAINT readpast_throughput_pk;

-- The batch was compiled before the columns existed: what names them runs as
-- a batch of its own.
EXEC (N'ALTER TABLE dbo.readpast_counts ADD CONSTRAINT readpast_counts_pk
    PRIMARY KEY (queue, state, stripe);
ALTER TABLE dbo.readpast_throughput ADD CONSTRAINT readpast_throughput_pk
    PRIMARY KEY (span, bucket, queue, outcome, stripe);');

COMMIT TRANSACTION;
