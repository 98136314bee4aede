SET XACT_ABORT ON;
BEGIN TRANSACTION;

-- A schedule may fan out (docs/SCHEDULES.md, "Fan-out"): each fire creates
-- one task per target its selectors match (names and tag:NAME, kept
-- space-separated; at most 50 of 69 characters), at most fanout_limit of
-- them running at once (0: all). NOT NULL with a constant default: a
-- metadata-only change, no row is rewritten (ALTER TABLE, "Adding NOT NULL
-- columns as an online operation").
ALTER TABLE dbo.readpast_schedules ADD targets nvarchar(4000) NOT NULL
    CONSTRAINT readpast_schedules_targets_df DEFAULT N'';
ALTER TABLE dbo.readpast_schedules ADD fanout_limit int NOT NULL
    CONSTRAINT readpast_schedules_fanout_limit_df DEFAULT 0;

COMMIT TRANSACTION;
