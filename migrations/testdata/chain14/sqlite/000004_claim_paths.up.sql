-- The claim stays flat behind any backlog (docs/QUEUE.md, "Claiming behind a
-- backlog"), and retention finds finished tasks by index: a pending task whose
-- available_at is ahead is delayed and out of the claim's indexes until due;
-- ungrouped and grouped ready tasks have indexes of their own. Ungrouped ones
-- are split by transactional as well: SQLite runs transactional tasks one at a
-- time (they hold its one writer), so while one runs the claim reads only the
-- others.
ALTER TABLE readpast_tasks ADD COLUMN delayed INTEGER NOT NULL DEFAULT 0;
UPDATE readpast_tasks SET delayed = 1
 WHERE state = 'pending' AND available_at > CAST(unixepoch('subsec') * 1000000 AS INTEGER);

DROP INDEX readpast_tasks_claim;
CREATE INDEX readpast_tasks_ready ON readpast_tasks (queue, transactional, priority, available_at, id)
    WHERE state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NULL;
CREATE INDEX readpast_tasks_ready_grouped ON readpast_tasks (queue, group_name, priority, available_at, id)
    WHERE state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NOT NULL;
CREATE INDEX readpast_tasks_delayed ON readpast_tasks (queue, available_at)
    WHERE state = 'pending' AND delayed = 1;
CREATE INDEX readpast_tasks_finished ON readpast_tasks (finished_at)
    WHERE state IN ('succeeded', 'failed', 'cancelled');
