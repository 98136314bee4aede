DROP INDEX readpast_tasks_schedule;
CREATE INDEX readpast_tasks_schedule ON readpast_tasks (schedule_name, id) WHERE schedule_name IS NOT NULL;
DROP INDEX readpast_tasks_group;
CREATE INDEX readpast_tasks_group ON readpast_tasks (group_name, id) WHERE group_name IS NOT NULL;
