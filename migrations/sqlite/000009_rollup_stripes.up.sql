-- Version 9 stripes SQL Server's rollup rows (a finish adds to the stripe of
-- its task id, readers sum the stripes), so one queue's finishes stop queuing
-- on one row each; this dialect keeps its rollups as they are. The file keeps
-- version numbers alike on every dialect: version N is the same schema
-- everywhere.
SELECT 1;
