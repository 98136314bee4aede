-- Version 14 makes PostgreSQL's readpast_retry count a retried task of a
-- fan-out step again among its step's unfinished tasks; this dialect does it
-- in Go (internal/queue/sqlite/jobs_step.go, reopenStepCount). The file keeps
-- version numbers alike on every dialect: version N is the same schema
-- everywhere.
SELECT 1;
