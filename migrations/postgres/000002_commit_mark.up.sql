-- A transactional task's transaction holds nothing that another task's
-- completion needs (docs/RELIABILITY.md, "A stalled node").
--
-- Its completion used to run inside the body's transaction: the task row, the
-- log row, the throughput rollups, the counts and the group counter, held
-- until its COMMIT came from the node. A node that froze (SIGSTOP, a VM pause)
-- or lost its network between the completion and the COMMIT left that session
-- idle in transaction, holding the rollup and count rows that every finish of
-- the queue takes: every node's finishes waited, then their heartbeats, then
-- their leases expired.
--
-- Now the body's transaction ends with readpast_mark_committed, which writes
-- the attempt's lease token into the task's own committed_token and takes no
-- other lock, and commits; the attempt is then recorded as succeeded by an
-- ordinary finish, in a transaction of one statement that never waits for the
-- node. The mark is what makes that safe whatever dies in between:
-- readpast_end_plain records an attempt whose body committed as succeeded
-- however it was ended (the finish, a release at shutdown, the reclaim of its
-- expired lease), so a committed body never runs again. While the mark's
-- transaction is open the task row is locked: a reclaim skips it (SKIP
-- LOCKED) and cannot hand the task to another node before it commits or rolls
-- back.

ALTER TABLE readpast_tasks ADD COLUMN committed_token bigint; -- the lease under which the body committed

-- readpast_mark_committed marks the task's body committed under lease
-- p_token, in the body's transaction, and fails (SQLSTATE RP001) when the
-- lease is not current: the caller's COMMIT then rolls the body back.
CREATE FUNCTION readpast_mark_committed(p_id bigint, p_token bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE readpast_tasks SET committed_token = p_token
     WHERE id = p_id AND lease_token = p_token AND state = 'running';
    IF NOT FOUND THEN
        RAISE EXCEPTION 'the lease of task % is not current: its body is rolled back', p_id USING ERRCODE = 'RP001';
    END IF;
END
$$;

-- readpast_end_state is the state an attempt leaves its task in. A body that
-- committed succeeded; otherwise an operator's cancel request wins: a release
-- or a reclaim must not put the task back to run again. Inlined where it is
-- used (an SQL function).
DROP FUNCTION readpast_end_state(boolean, text, boolean, integer, integer, integer);
CREATE FUNCTION readpast_end_state(p_release boolean, p_outcome text, p_cancel_requested boolean,
                                   p_attempts integer, p_retry_base integer, p_max_attempts integer,
                                   p_committed boolean)
RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN p_committed THEN 'succeeded'
        WHEN p_cancel_requested THEN 'cancelled'
        WHEN p_release THEN 'pending'
        WHEN p_outcome = 'succeeded' THEN 'succeeded'
        WHEN p_outcome = 'cancelled' THEN 'cancelled'
        WHEN p_attempts - p_retry_base < p_max_attempts THEN 'pending'
        ELSE 'failed' END
$$;

-- readpast_end_plain as in the baseline, with the committed body's outcome.
CREATE OR REPLACE FUNCTION readpast_end_plain(
    p_release boolean, p_only bigint[], p_count boolean,
    p_ids bigint[], p_tokens bigint[], p_outcomes text[], p_errors text[],
    p_nodes text[], p_workers text[], p_sessions text[],
    p_started timestamptz[], p_finished timestamptz[], p_rows bigint[], p_messages text[])
RETURNS TABLE (out_ord bigint, out_id bigint, out_state text, out_retry_at timestamptz,
               out_queue text, out_group text, out_chain text, out_stage integer)
LANGUAGE plpgsql
SET jit = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET enable_seqscan = off
AS $$
BEGIN
    RETURN QUERY
    WITH a AS MATERIALIZED (
        SELECT DISTINCT ON (x.id, x.token) x.*
          FROM unnest(p_ids, p_tokens, p_outcomes, p_errors, p_nodes, p_workers, p_sessions,
                      p_started, p_finished, p_rows, p_messages)
               WITH ORDINALITY AS x(id, token, outcome, err, node, worker, sess, started, finished, nrows, msg, ord)
         WHERE p_only IS NULL OR x.id = ANY (p_only)
         ORDER BY x.id, x.token, x.ord
    ),
    ended AS (
        UPDATE readpast_tasks t
           SET state = readpast_end_state(p_release, a.outcome, t.cancel_requested, t.attempts, t.retry_base, t.max_attempts,
                                  t.committed_token = a.token),
               available_at = CASE
                   WHEN readpast_end_state(p_release, a.outcome, t.cancel_requested, t.attempts, t.retry_base, t.max_attempts,
                                  t.committed_token = a.token) <> 'pending'
                       THEN t.available_at
                   WHEN p_release THEN now()
                   ELSE now() + readpast_backoff(t.attempts - t.retry_base) END,
               -- A retry waits out its backoff (at least 1.5 s) as a delayed
               -- task; a released task is ready at once.
               delayed = readpast_end_state(p_release, a.outcome, t.cancel_requested, t.attempts, t.retry_base, t.max_attempts,
                                  t.committed_token = a.token) = 'pending'
                         AND NOT p_release,
               finished_at = CASE
                   WHEN readpast_end_state(p_release, a.outcome, t.cancel_requested, t.attempts, t.retry_base, t.max_attempts,
                                  t.committed_token = a.token) = 'pending'
                       THEN NULL ELSE now() END,
               -- A success clears the error of an earlier attempt (the log keeps it).
               last_error = CASE
                   WHEN readpast_end_state(p_release, a.outcome, t.cancel_requested, t.attempts, t.retry_base, t.max_attempts,
                                  t.committed_token = a.token) = 'succeeded'
                       THEN NULL ELSE coalesce(nullif(a.err, ''), t.last_error) END,
               lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, cancel_requested = false
          FROM a
         WHERE t.id = a.id AND t.lease_token = a.token AND t.state || '' = 'running'
        RETURNING a.ord, t.id, t.state, CASE WHEN t.state = 'pending' THEN t.available_at END AS retry_at,
                  t.queue, t.group_name, t.chain, t.stage, t.attempts,
                  coalesce(nullif(a.sess, ''), t.session_id, '') AS sess,
                  a.node, a.worker, a.started, a.finished,
                  -- A body that committed (readpast_mark_committed) succeeded,
                  -- whatever ended its attempt since: a reclaim of its expired
                  -- lease, a release at shutdown.
                  CASE WHEN t.committed_token = a.token THEN 'succeeded' ELSE a.outcome END AS outcome,
                  CASE WHEN t.committed_token = a.token AND a.outcome <> 'succeeded'
                       THEN 'its body had committed, so the attempt succeeded; it was ended as ' || a.outcome
                            || coalesce(': ' || nullif(a.err, ''), '')
                       ELSE a.err END AS err,
                  a.nrows, a.msg
    ),
    rolled AS (
        -- The throughput rollups: attempts per minute and per hour, queue and
        -- outcome, with the time they ran; rows locked in key order.
        INSERT INTO readpast_throughput AS tp (span, bucket, queue, outcome, n, busy_ms)
        SELECT sp.span, date_trunc(sp.span, coalesce(e.finished, now())), e.queue, e.outcome, count(*),
               sum(greatest(0, (extract(epoch FROM coalesce(e.finished, now()) - coalesce(e.started, e.finished, now())) * 1000)::bigint))
          FROM ended e CROSS JOIN (VALUES ('minute'), ('hour')) AS sp(span)
         GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
        ON CONFLICT (span, bucket, queue, outcome) DO UPDATE SET n = tp.n + excluded.n, busy_ms = tp.busy_ms + excluded.busy_ms
        RETURNING 1
    ),
    logged AS (
        INSERT INTO readpast_attempts (task_id, attempt, queue, node, worker, session_id, started_at, finished_at,
                                       duration_ms, outcome, error, rows_affected, messages)
        SELECT e.id, e.attempts, e.queue, coalesce(e.node, ''), coalesce(e.worker, ''), e.sess, ts.s, ts.f,
               greatest(0, (extract(epoch FROM ts.f - ts.s) * 1000)::bigint), e.outcome,
               coalesce(e.err, ''), coalesce(e.nrows, 0), coalesce(e.msg, '')
          FROM ended e
               CROSS JOIN LATERAL (SELECT coalesce(e.started, e.finished, now()) AS s,
                                          coalesce(e.finished, now()) AS f) ts
         ORDER BY e.ord
    ),
    counted AS (
        -- The counts (000005's readpast_count in this statement), rows in
        -- key order; taken after the rollups' rows, which this reads first.
        INSERT INTO readpast_counts AS c (queue, state, n)
        SELECT e.queue, e.state, count(*)
          FROM ended e
         WHERE p_count AND e.state IN ('succeeded', 'failed', 'cancelled') AND (SELECT count(*) FROM rolled) >= 0
         GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (queue, state) DO UPDATE SET n = c.n + excluded.n
    )
    SELECT e.ord, e.id, e.state, e.retry_at, e.queue, e.group_name, e.chain, e.stage FROM ended e;
END
$$;

-- readpast_pin_functions as in the baseline, with readpast_mark_committed
-- among the entry points it pins.
CREATE OR REPLACE FUNCTION readpast_pin_functions() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
              WHERE p.pronamespace = current_schema()::regnamespace
                AND p.proname IN ('readpast_claim', 'readpast_enqueue', 'readpast_end_attempts',
                                  'readpast_cancel', 'readpast_retry', 'readpast_mark_committed') LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f, current_schema());
    END LOOP;
END
$$;

SELECT readpast_pin_functions();
