-- Version 8 is PostgreSQL's leaner hot path (fewer index entries per state
-- change, a cheaper fencing token, PL/pgSQL instead of SQL functions); this
-- dialect has nothing to change. The file keeps version numbers alike on every
-- dialect: version N is the same schema everywhere.
SELECT 1;
