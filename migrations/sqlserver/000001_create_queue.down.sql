DROP TABLE dbo.readpast_audit;
DROP TABLE dbo.readpast_nodes;
DROP TABLE dbo.readpast_attempts;
DROP TABLE dbo.readpast_tasks;
DROP TABLE dbo.readpast_chains;
DROP TABLE dbo.readpast_groups;
DROP TABLE dbo.readpast_queues;
