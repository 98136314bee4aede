DROP INDEX readpast_tasks_unique ON dbo.readpast_tasks;
ALTER TABLE dbo.readpast_tasks DROP COLUMN unique_key;
