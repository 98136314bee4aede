-- Version 2 lets PostgreSQL and SQL Server commit a transactional body with a
-- mark on its own task row and record its end after (docs/RELIABILITY.md, "A
-- stalled node"). SQLite records a transactional task's end inside the body's
-- transaction as before: its one writer is held for the whole body anyway, so
-- a stalled process stops every writer whatever the transaction holds, and
-- splitting the end from the commit would only add a write. The file keeps
-- version numbers alike on every dialect: version N is the same schema
-- everywhere.
SELECT 1;
