-- Removes every ReadPast table (migrate down); golang-migrate's version table stays.
DROP TABLE readpast_schedules;
DROP TABLE readpast_throughput;
DROP TABLE readpast_counts;
DROP TABLE readpast_audit;
DROP TABLE readpast_nodes;
DROP TABLE readpast_attempts;
DROP TABLE readpast_tasks;
DROP TABLE readpast_chains;
DROP TABLE readpast_groups;
DROP TABLE readpast_queues;
