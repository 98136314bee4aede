-- The store's hot path on one PostgreSQL backend, without contention: server
-- time per task of readpast_claim and readpast_end_attempts, the two calls a
-- node makes for every batch (docs/benchmarks/river.md, "Claims and finishes
-- of 2026-11-27"). For a scratch database only: it empties the tasks and the log.
--
--   readpast migrate --dsn postgres://…/scratch
--   psql -d scratch -v tasks=60000 -v cycles=100 -v batch=500 -f scripts/pg-claim-finish.sql
--
-- Each cycle claims a batch and finishes it as succeeded, each call in its own
-- transaction. Commits do not wait for the WAL flush (synchronous_commit off in
-- this session only), so the figures are the statements' own time.
\set ON_ERROR_STOP on
\if :{?tasks} \else \set tasks 60000 \endif
\if :{?cycles} \else \set cycles 100 \endif
\if :{?batch} \else \set batch 500 \endif

CREATE PROCEDURE pg_temp.claim_finish_cycles(k integer, n integer)
LANGUAGE plpgsql AS $$
DECLARE
    ids bigint[];
    tokens bigint[];
    t0 timestamptz;
    claiming interval := '0';
    finishing interval := '0';
    got bigint := 0;
BEGIN
    FOR i IN 1 .. k LOOP
        t0 := clock_timestamp();
        SELECT array_agg(id), array_agg(lease_token) INTO ids, tokens
          FROM readpast_claim('default', 'bench/w', n, 60000000);
        COMMIT;
        claiming := claiming + (clock_timestamp() - t0);
        EXIT WHEN ids IS NULL;
        got := got + cardinality(ids);
        t0 := clock_timestamp();
        PERFORM count(*) FROM readpast_end_attempts(false, false, ids, tokens,
            array_fill('succeeded'::text, ARRAY[cardinality(ids)]), array_fill(''::text, ARRAY[cardinality(ids)]),
            array_fill('bench'::text, ARRAY[cardinality(ids)]), array_fill('w'::text, ARRAY[cardinality(ids)]),
            array_fill('1'::text, ARRAY[cardinality(ids)]), array_fill(now(), ARRAY[cardinality(ids)]),
            array_fill(now(), ARRAY[cardinality(ids)]), array_fill(1::bigint, ARRAY[cardinality(ids)]),
            array_fill(''::text, ARRAY[cardinality(ids)]));
        COMMIT;
        finishing := finishing + (clock_timestamp() - t0);
    END LOOP;
    RAISE NOTICE '% tasks in batches of %: claim % µs a task, finish % µs a task', got, n,
        round((extract(epoch FROM claiming) * 1e6 / greatest(got, 1))::numeric, 2),
        round((extract(epoch FROM finishing) * 1e6 / greatest(got, 1))::numeric, 2);
END
$$;

TRUNCATE readpast_tasks, readpast_attempts, readpast_throughput, readpast_counts;
INSERT INTO readpast_queues (name) VALUES ('default') ON CONFLICT DO NOTHING;
INSERT INTO readpast_tasks (queue, body) SELECT 'default', 'SELECT 1' FROM generate_series(1, :tasks);
VACUUM ANALYZE readpast_tasks;
VACUUM ANALYZE readpast_attempts;
SET synchronous_commit = off;
CALL pg_temp.claim_finish_cycles(:cycles, :batch);
