-- Version 7 is SQL Server's own housekeeping (bodies out of row, no lock
-- escalation on the log); this dialect has nothing to change. The file keeps
-- version numbers alike on every dialect: version N is the same schema everywhere.
SELECT 1;
