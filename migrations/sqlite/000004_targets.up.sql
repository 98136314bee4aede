-- Named targets (docs/TARGETS.md): a task names the target its body runs
-- on ('': its queue's default target, else the node's default), and a queue
-- may name a default target. A node claims only tasks of targets it serves.
ALTER TABLE readpast_tasks ADD COLUMN target TEXT NOT NULL DEFAULT '';
ALTER TABLE readpast_queues ADD COLUMN default_target TEXT NOT NULL DEFAULT '';
-- A schedule's runs name their target as a task does.
ALTER TABLE readpast_schedules ADD COLUMN target TEXT NOT NULL DEFAULT '';

-- The claim's ready indexes carry the target last, so the claim's filter on
-- it is read from the index entry: without it each candidate cost a look-up
-- of its row, two and a half times the claim (docs/TARGETS.md, "What a
-- claim costs"). Both indexes hold only ready tasks: rebuilding them reads
-- no history.
DROP INDEX readpast_tasks_ready;
CREATE INDEX readpast_tasks_ready ON readpast_tasks (queue, transactional, priority, available_at, id, target)
    WHERE state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NULL;
DROP INDEX readpast_tasks_ready_grouped;
CREATE INDEX readpast_tasks_ready_grouped ON readpast_tasks (queue, group_name, priority, available_at, id, target)
    WHERE state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NOT NULL;
