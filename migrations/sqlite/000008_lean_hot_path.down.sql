-- Version 8 changed nothing on this dialect.
SELECT 1;
