-- Version 2 is PostgreSQL's set-based hot path (server-side functions); this
-- dialect has nothing to change. The file keeps version numbers alike on every
-- dialect: version N is the same schema everywhere.
SELECT 1;
