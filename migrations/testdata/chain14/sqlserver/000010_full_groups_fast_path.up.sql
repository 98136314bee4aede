-- Version 10 is PostgreSQL's claim behind full groups taking the path of a
-- queue without groups; this dialect has nothing to change. The file keeps
-- version numbers alike on every dialect: version N is the same schema
-- everywhere.
SELECT 1;
