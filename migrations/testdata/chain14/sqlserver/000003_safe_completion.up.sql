-- Version 3 changes PostgreSQL's server-side functions (cancel requests
-- survive every end of an attempt; functions pinned to their schema). This
-- dialect keeps that logic in Go and needs no schema change.
SELECT 1;
