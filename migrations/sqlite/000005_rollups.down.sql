DROP TABLE readpast_throughput;
DROP TABLE readpast_counts;
