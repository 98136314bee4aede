DROP INDEX readpast_tasks_schedule;
ALTER TABLE readpast_tasks DROP COLUMN fire_at;
ALTER TABLE readpast_tasks DROP COLUMN schedule_name;
DROP TABLE readpast_schedules;
