SET XACT_ABORT ON;
BEGIN TRANSACTION;

-- Named targets (docs/TARGETS.md): a task names the target its body runs
-- on ('': its queue's default target, else the node's default), and a queue
-- may name a default target. A node claims only tasks of targets it serves;
-- the claim reads past the others on its ready indexes, which stay as they
-- were (docs/TARGETS.md, "What a claim costs").
--
-- NOT NULL with a constant default: from SQL Server 2012 Enterprise edition
-- on (and Azure SQL) adding such a column changes metadata only and no row
-- is rewritten ("Adding NOT NULL columns as an online operation", ALTER
-- TABLE, Microsoft Learn); on other editions it updates every row, once.
ALTER TABLE dbo.readpast_tasks ADD target nvarchar(64) NOT NULL
    CONSTRAINT readpast_tasks_target_df DEFAULT N'';
ALTER TABLE dbo.readpast_queues ADD default_target nvarchar(64) NOT NULL
    CONSTRAINT readpast_queues_default_target_df DEFAULT N'';
ALTER TABLE dbo.readpast_schedules ADD target nvarchar(64) NOT NULL
    CONSTRAINT readpast_schedules_target_df DEFAULT N'';

COMMIT TRANSACTION;
