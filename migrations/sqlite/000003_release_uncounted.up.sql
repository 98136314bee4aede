-- Version 3 makes PostgreSQL's release of attempts a fault stopped one
-- statement (readpast_release_uncounted); this dialect gives the attempt back
-- in the release's own statement already. The file keeps version numbers alike
-- on every dialect: version N is the same schema everywhere.
SELECT 1;
