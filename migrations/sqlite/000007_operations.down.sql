DROP TABLE readpast_bulk_ops;
