-- The execution log filtered by queue and outcome (docs/BENCHMARKS.md, "The
-- dashboard against history").
--
-- The log had (queue, id) and (outcome, id): a page of one queue's attempts
-- of one outcome read one of them newest first and filtered the other column,
-- so a queue with few attempts of that outcome read the outcome's whole
-- history (4.8 s at 10M log rows; SQLite does not intersect two indexes).
-- (queue, outcome, id) holds each queue's attempts of each outcome as one
-- range in id order; it replaces (queue, id), and a page of one queue merges
-- the newest rows of one range per outcome (sqlite/logs.go), as PostgreSQL's
-- does since its migration 000008. The index count per log row stays four.
-- On a large log the index build reads the table once.
CREATE INDEX readpast_attempts_list ON readpast_attempts (queue, outcome, id);
DROP INDEX readpast_attempts_queue;
