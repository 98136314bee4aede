-- Result output (docs/QUEUE.md, "Result output"): a queue's result_rows says
-- how many rows of its result sets an attempt keeps (0, the default: none),
-- and readpast_results holds what each attempt kept, one row per attempt
-- that kept any, written by the statement that ends the attempt. It is a
-- table of its own, not a column of readpast_attempts, so no read of the
-- execution log carries it and readpast_end_attempts keeps its signature;
-- it goes with its task (retention's purge of finished tasks, a task's
-- delete). Adding a column with a constant default and creating an empty
-- table are catalog changes: nothing is rewritten.
ALTER TABLE readpast_queues ADD COLUMN result_rows integer NOT NULL DEFAULT 0;

CREATE TABLE readpast_results (
    task_id bigint NOT NULL,
    attempt integer NOT NULL,
    results text NOT NULL,
    PRIMARY KEY (task_id, attempt)
);
