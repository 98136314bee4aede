-- Back to 000006's hot path: the dashboard's full indexes, the md5 token, SQL
-- functions, and the finish that reads its counts back.

DROP INDEX readpast_tasks_list;
CREATE INDEX readpast_tasks_state ON readpast_tasks (state, id);
CREATE INDEX readpast_tasks_queue ON readpast_tasks (queue, id);
CREATE INDEX readpast_tasks_queue_state ON readpast_tasks (queue, state, id);

DROP INDEX readpast_attempts_list;
CREATE INDEX readpast_attempts_queue ON readpast_attempts (queue, id);
CREATE INDEX readpast_attempts_outcome ON readpast_attempts (outcome, id);

-- A fencing token: 63 random bits from the server's strong random source
-- (gen_random_uuid), never 0.
CREATE FUNCTION readpast_new_token() RETURNS bigint
LANGUAGE sql VOLATILE AS $$
    SELECT greatest(1, ('x' || substr(md5(gen_random_uuid()::text), 1, 16))::bit(64)::bigint
                       & 9223372036854775807)
$$;

DROP FUNCTION readpast_claimed(bigint[], text, bigint);
CREATE FUNCTION readpast_claimed(p_ids bigint[], p_owner text, p_lease_us bigint)
RETURNS SETOF readpast_tasks
LANGUAGE sql
SET jit = off
AS $$
    WITH claimed AS (
        UPDATE readpast_tasks t
           SET state = 'running', attempts = t.attempts + 1, lease_owner = p_owner,
               lease_token = readpast_new_token(),
               lease_expires_at = now() + p_lease_us * interval '1 microsecond',
               started_at = now(), cancel_requested = false, session_id = NULL
         WHERE t.id = ANY (p_ids)
        RETURNING t.*
    )
    SELECT * FROM claimed ORDER BY claimed.priority, claimed.available_at, claimed.id
$$;

DROP FUNCTION readpast_count(text[], text[], bigint[]);
CREATE FUNCTION readpast_count(p_queues text[], p_states text[], p_n bigint[]) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO readpast_counts AS c (queue, state, n)
    SELECT x.q, x.s, sum(x.n) FROM unnest(p_queues, p_states, p_n) AS x(q, s, n)
     WHERE x.q IS NOT NULL GROUP BY x.q, x.s HAVING sum(x.n) <> 0 ORDER BY x.q, x.s
    ON CONFLICT (queue, state) DO UPDATE SET n = c.n + excluded.n
$$;

-- readpast_end_attempts as in 000005.
CREATE OR REPLACE FUNCTION readpast_end_attempts(
    p_release boolean, p_reclaim boolean,
    p_ids bigint[], p_tokens bigint[], p_outcomes text[], p_errors text[],
    p_nodes text[], p_workers text[], p_sessions text[],
    p_started timestamptz[], p_finished timestamptz[], p_rows bigint[], p_messages text[])
RETURNS TABLE (out_id bigint, out_state text, out_retry_at timestamptz)
LANGUAGE plpgsql
SET jit = off
AS $$
DECLARE
    v_held bigint[];
    v_cq text[];   -- count changes of this transaction: queue, state, by
    v_cs text[];
    v_cn bigint[];
    r record;
BEGIN
    -- Locks in the global order: chains, tasks, groups.
    PERFORM 1 FROM readpast_chains
     WHERE name IN (SELECT x.chain FROM readpast_tasks x WHERE x.id = ANY (p_ids) AND x.chain IS NOT NULL)
     ORDER BY name FOR UPDATE;
    -- The tasks are found by primary key. The state test is written so that it
    -- cannot match the partial index of running tasks: on fresh statistics (a
    -- new or truncated table) the planner thinks that index tiny and scans all
    -- of it, while under load it is mostly entries of tasks that ran already.
    IF p_reclaim THEN
        v_held := ARRAY(
            SELECT x.id FROM readpast_tasks x JOIN unnest(p_ids, p_tokens) AS l(id, token)
                ON x.id = l.id AND x.lease_token = l.token
             WHERE x.state || '' = 'running' AND x.lease_expires_at < now()
             ORDER BY x.id FOR UPDATE OF x SKIP LOCKED);
    ELSE
        v_held := ARRAY(
            SELECT x.id FROM readpast_tasks x JOIN unnest(p_ids, p_tokens) AS l(id, token)
                ON x.id = l.id AND x.lease_token = l.token
             WHERE x.state || '' = 'running'
             ORDER BY x.id FOR UPDATE OF x);
    END IF;
    PERFORM 1 FROM readpast_groups
     WHERE name IN (SELECT x.group_name FROM readpast_tasks x WHERE x.id = ANY (v_held) AND x.group_name IS NOT NULL)
     ORDER BY name FOR UPDATE;

    -- One statement for the batch. Data-modifying CTEs all run to completion, on
    -- the rows locked above (a fresh snapshot: they are current).
    RETURN QUERY
    WITH a AS (
        SELECT * FROM unnest(p_ids, p_tokens, p_outcomes, p_errors, p_nodes, p_workers, p_sessions,
                             p_started, p_finished, p_rows, p_messages)
               WITH ORDINALITY AS x(id, token, outcome, err, node, worker, sess, started, finished, nrows, msg, ord)
    ),
    -- The first element of each held lease; a repeat of it finds the task ended.
    held AS (
        SELECT DISTINCT ON (a.id) a.*, t.attempts, t.retry_base, t.max_attempts, t.queue,
               t.session_id AS task_session, t.group_name, t.cancel_requested
          FROM a JOIN readpast_tasks t ON t.id = a.id AND t.lease_token = a.token AND t.state || '' = 'running'
         WHERE a.id = ANY (v_held)
         ORDER BY a.id, a.ord
    ),
    decided AS (
        SELECT h.*, s.state,
               CASE WHEN s.state <> 'pending' THEN NULL
                    WHEN p_release THEN now()
                    ELSE now() + readpast_backoff(h.attempts - h.retry_base)
               END AS retry_at
          FROM held h CROSS JOIN LATERAL (SELECT CASE
                   -- An operator's cancel request wins: a release or a reclaim
                   -- must not put the task back to run again.
                   WHEN h.cancel_requested THEN 'cancelled'
                   WHEN p_release THEN 'pending'
                   WHEN h.outcome = 'succeeded' THEN 'succeeded'
                   WHEN h.outcome = 'cancelled' THEN 'cancelled'
                   WHEN h.attempts - h.retry_base < h.max_attempts THEN 'pending'
                   ELSE 'failed' END AS state) s
    ),
    ended AS (
        UPDATE readpast_tasks t
           SET state = d.state, available_at = coalesce(d.retry_at, t.available_at),
               delayed = coalesce(d.retry_at > now(), false),
               finished_at = CASE WHEN d.state = 'pending' THEN NULL ELSE now() END,
               -- A success clears the error of an earlier attempt (the log keeps it).
               last_error = CASE WHEN d.state = 'succeeded' THEN NULL ELSE coalesce(nullif(d.err, ''), t.last_error) END,
               lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, cancel_requested = false
          FROM decided d
         WHERE t.id = d.id
        RETURNING t.id
    ),
    freed AS (
        UPDATE readpast_groups g SET running = greatest(g.running - x.k, 0)
          FROM (SELECT d.group_name, count(*) AS k FROM decided d
                 WHERE d.group_name IS NOT NULL GROUP BY d.group_name) x
         WHERE g.name = x.group_name
        RETURNING g.name
    ),
    rolled AS (
        -- The throughput rollups: attempts per minute and per hour, queue and
        -- outcome, with the time they ran; rows locked in key order.
        INSERT INTO readpast_throughput AS tp (span, bucket, queue, outcome, n, busy_ms)
        SELECT sp.span, date_trunc(sp.span, coalesce(d.finished, now())), d.queue, d.outcome, count(*),
               sum(greatest(0, (extract(epoch FROM coalesce(d.finished, now()) - coalesce(d.started, d.finished, now())) * 1000)::bigint))
          FROM decided d CROSS JOIN (VALUES ('minute'), ('hour')) AS sp(span)
         GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
        ON CONFLICT (span, bucket, queue, outcome) DO UPDATE SET n = tp.n + excluded.n, busy_ms = tp.busy_ms + excluded.busy_ms
        RETURNING tp.span
    ),
    logged AS (
        INSERT INTO readpast_attempts (task_id, attempt, queue, node, worker, session_id, started_at, finished_at,
                                       duration_ms, outcome, error, rows_affected, messages)
        SELECT d.id, d.attempts, d.queue, coalesce(d.node, ''), coalesce(d.worker, ''),
               coalesce(nullif(d.sess, ''), d.task_session, ''), ts.s, ts.f,
               greatest(0, (extract(epoch FROM ts.f - ts.s) * 1000)::bigint), d.outcome,
               coalesce(d.err, ''), coalesce(d.nrows, 0), coalesce(d.msg, '')
          FROM decided d
               CROSS JOIN LATERAL (SELECT coalesce(d.started, d.finished, now()) AS s,
                                          coalesce(d.finished, now()) AS f) ts
         ORDER BY d.ord
        RETURNING id
    )
    SELECT a.id, d.state, d.retry_at
      FROM a LEFT JOIN decided d ON d.ord = a.ord
     ORDER BY a.ord;

    -- The finished counts of the tasks that ended for good.
    SELECT array_agg(t.queue), array_agg(t.state), array_agg(1::bigint) INTO v_cq, v_cs, v_cn
      FROM readpast_tasks t WHERE t.id = ANY (v_held) AND t.state IN ('succeeded', 'failed', 'cancelled');

    -- Chains: the failure policy for each task of a chain that ended failed or
    -- cancelled, then the chain's next stage is opened. The chain rows are held.
    FOR r IN SELECT t.id, t.chain, t.stage, t.state FROM readpast_tasks t
              WHERE t.id = ANY (v_held) AND t.chain IS NOT NULL AND t.state IN ('failed', 'cancelled')
              ORDER BY t.chain, t.id LOOP
        v_cq := v_cq || ARRAY(SELECT readpast_chain_failed(r.chain, r.id, r.stage, r.state));
    END LOOP;
    v_cs := v_cs || array_fill('cancelled'::text, ARRAY[coalesce(cardinality(v_cq), 0) - coalesce(cardinality(v_cs), 0)]);
    v_cn := v_cn || array_fill(1::bigint, ARRAY[coalesce(cardinality(v_cq), 0) - coalesce(cardinality(v_cn), 0)]);
    PERFORM readpast_count(v_cq, v_cs, v_cn);
    FOR r IN SELECT DISTINCT t.chain FROM readpast_tasks t
              WHERE t.id = ANY (v_held) AND t.chain IS NOT NULL ORDER BY t.chain LOOP
        PERFORM readpast_refresh_chain(r.chain);
    END LOOP;
END
$$;

SELECT readpast_pin_functions();
