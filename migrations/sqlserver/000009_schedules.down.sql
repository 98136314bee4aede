DROP INDEX readpast_tasks_schedule ON dbo.readpast_tasks;
ALTER TABLE dbo.readpast_tasks DROP COLUMN schedule_name, fire_at;
DROP TABLE dbo.readpast_schedules;
