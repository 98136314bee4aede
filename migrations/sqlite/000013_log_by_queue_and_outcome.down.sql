CREATE INDEX readpast_attempts_queue ON readpast_attempts (queue, id);
DROP INDEX readpast_attempts_list;
