DROP INDEX readpast_tasks_unique;
ALTER TABLE readpast_tasks DROP COLUMN unique_key;
