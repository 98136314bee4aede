ALTER TABLE readpast_tasks DROP COLUMN name;
DROP TABLE readpast_bulk_ops;
