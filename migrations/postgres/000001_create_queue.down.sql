DROP TABLE readpast_audit;
DROP TABLE readpast_nodes;
DROP TABLE readpast_attempts;
DROP TABLE readpast_tasks;
DROP TABLE readpast_chains;
DROP TABLE readpast_groups;
DROP TABLE readpast_queues;
