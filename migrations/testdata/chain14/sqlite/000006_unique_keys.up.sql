-- Unique keys on enqueue (docs/QUEUE.md, "Unique keys"): a partial unique index
-- over unfinished keyed tasks arbitrates; a claim keeps a task inside it, with
-- the same key, so it never conflicts with anything.
ALTER TABLE readpast_tasks ADD COLUMN unique_key TEXT;
CREATE UNIQUE INDEX readpast_tasks_unique ON readpast_tasks (queue, unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('pending', 'running');
