-- Version 10 changed nothing on this dialect.
SELECT 1;
