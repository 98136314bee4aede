DROP FUNCTION readpast_retry(bigint, text);
DROP FUNCTION readpast_cancel(bigint, text);
DROP FUNCTION readpast_end_attempts(boolean, boolean, bigint[], bigint[], text[], text[], text[], text[], text[],
                                    timestamptz[], timestamptz[], bigint[], text[]);
DROP FUNCTION readpast_claim(text, text, integer, bigint);
DROP FUNCTION readpast_enqueue(text[], text[], integer[], timestamptz[], bigint[], text[], text[], integer[],
                               integer[], bigint[], boolean[], boolean[], text[]);
DROP FUNCTION readpast_chain_failed(text, bigint, integer, text);
DROP FUNCTION readpast_refresh_chain(text);
DROP FUNCTION readpast_backoff(integer);
DROP FUNCTION readpast_new_token();
DROP TABLE readpast_audit;
DROP TABLE readpast_nodes;
DROP TABLE readpast_attempts;
DROP TABLE readpast_tasks;
DROP TABLE readpast_chains;
DROP TABLE readpast_groups;
DROP TABLE readpast_queues;
