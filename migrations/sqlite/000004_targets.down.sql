ALTER TABLE readpast_queues DROP COLUMN default_target;
ALTER TABLE readpast_tasks DROP COLUMN target;
