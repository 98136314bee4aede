-- All or nothing: golang-migrate sends the file as one batch; XACT_ABORT rolls
-- the transaction back on any error, and a batch cut short leaves it open until
-- the migration's session ends, which rolls it back (migrations.Up).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

DROP INDEX readpast_groups_free ON dbo.readpast_groups;

-- SQL Server refuses to drop a column while a default constraint names it.
-- (Babelfish names its defaults its own way, not as objects of this name, and
-- drops a column's default with the column.)
IF OBJECT_ID(N'dbo.readpast_groups_has_free_df', N'D') IS NOT NULL
    ALTER TABLE dbo.readpast_groups DROP CONSTRAINT readpast_groups_has_free_df;

ALTER TABLE dbo.readpast_groups DROP COLUMN has_free;

COMMIT TRANSACTION;
