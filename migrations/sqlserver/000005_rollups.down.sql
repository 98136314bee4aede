DROP TABLE dbo.readpast_throughput;
DROP TABLE dbo.readpast_counts;
