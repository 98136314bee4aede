-- The old indexes are built first, as the up migration does.
CREATE INDEX readpast_tasks_group ON readpast_tasks (group_name, id) WHERE group_name IS NOT NULL;
CREATE INDEX readpast_tasks_schedule ON readpast_tasks (schedule_name, id) WHERE schedule_name IS NOT NULL;
DROP INDEX readpast_tasks_group_state;
DROP INDEX readpast_tasks_schedule_state;
