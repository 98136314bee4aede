-- Removes every ReadPast function and table (migrate down); golang-migrate's
-- version table stays. Functions first: readpast_claim returns the tasks' row
-- type.
DROP FUNCTION readpast_pin_functions;
DROP FUNCTION readpast_retry;
DROP FUNCTION readpast_cancel;
DROP FUNCTION readpast_end_attempts;
DROP FUNCTION readpast_end_plain;
DROP FUNCTION readpast_end_state;
DROP FUNCTION readpast_claim;
DROP FUNCTION readpast_enqueue;
DROP FUNCTION readpast_group_admits;
DROP FUNCTION readpast_count;
DROP FUNCTION readpast_chain_failed;
DROP FUNCTION readpast_refresh_chain;
DROP FUNCTION readpast_backoff;
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
