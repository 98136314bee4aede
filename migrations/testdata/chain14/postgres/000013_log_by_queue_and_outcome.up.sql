-- Version 13 gives SQLite and SQL Server the index of the execution log by
-- queue and outcome that PostgreSQL has had since its version 8; this dialect
-- has nothing to change. The file keeps version numbers alike on every
-- dialect: version N is the same schema everywhere.
SELECT 1;
