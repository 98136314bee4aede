-- The claim reads one range per target it serves (docs/TARGETS.md, "Flat
-- behind another target's backlog"): the ready indexes put the target right
-- after the queue (and after transactional, which splits the ungrouped one),
-- so ready tasks of a target the node does not serve are never read, however
-- many there are (SPEC §9). They replace the indexes of migration 000004,
-- which carried the target last, as a filter read off each entry. Both hold
-- only ready tasks: building them reads no history.
CREATE INDEX readpast_tasks_ready_target ON readpast_tasks (queue, transactional, target, priority, available_at, id)
    WHERE state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NULL;
CREATE INDEX readpast_tasks_ready_grouped_target ON readpast_tasks (queue, target, group_name, priority, available_at, id)
    WHERE state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NOT NULL;
DROP INDEX readpast_tasks_ready;
DROP INDEX readpast_tasks_ready_grouped;
