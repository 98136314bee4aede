ALTER TABLE readpast_schedules DROP COLUMN fanout_limit;
ALTER TABLE readpast_schedules DROP COLUMN targets;
