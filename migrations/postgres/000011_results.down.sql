DROP TABLE readpast_results;
ALTER TABLE readpast_queues DROP COLUMN result_rows;
