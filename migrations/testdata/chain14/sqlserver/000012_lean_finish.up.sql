-- Version 12 is PostgreSQL's plain finish in one statement; this dialect has
-- nothing to change. The file keeps version numbers alike on every dialect:
-- version N is the same schema everywhere.
SELECT 1;
