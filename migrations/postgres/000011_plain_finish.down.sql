-- Back to 000008's finish: one function, its tasks locked before they are read.

-- End attempts as in 000008. The tasks that ended for good, and those of a
-- chain, are taken from the rows the statement updated, never read again.
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
    v_out_ids bigint[];   -- the result, one element per attempt given
    v_out_states text[];
    v_out_retry timestamptz[];
    v_cq text[];          -- count changes of this transaction: queue, state, by
    v_cs text[];
    v_cn bigint[];
    v_ch_ids bigint[];    -- ended tasks of chains, by chain and id
    v_ch_names text[];
    v_ch_stages integer[];
    v_ch_states text[];
    v_chain text;
    v_chains text[];      -- the chains of the batch, none: NULL
    v_any_group boolean;  -- whether a task of the batch has a group
BEGIN
    -- Locks in the global order: chains, tasks, groups. A task's chain and
    -- group never change, so they are read first, by primary key (a test on
    -- chain or group_name would let the planner read their partial indexes,
    -- which hold every task of a chain or group ever run), and the statements
    -- that lock them run only when the batch has some.
    SELECT array_agg(DISTINCT x.chain) FILTER (WHERE x.chain IS NOT NULL), bool_or(x.group_name IS NOT NULL)
      INTO v_chains, v_any_group
      FROM readpast_tasks x WHERE x.id = ANY (p_ids);
    IF v_chains IS NOT NULL THEN
        PERFORM 1 FROM readpast_chains WHERE name = ANY (v_chains) ORDER BY name FOR UPDATE;
    END IF;
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
    IF v_any_group THEN
        PERFORM 1 FROM readpast_groups
         WHERE name IN (SELECT x.group_name FROM readpast_tasks x WHERE x.id = ANY (v_held))
         ORDER BY name FOR UPDATE;
    END IF;

    -- One statement for the batch. Data-modifying CTEs all run to completion, on
    -- the rows locked above (a fresh snapshot: they are current).
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
        RETURNING t.id, t.queue, t.state, t.chain, t.stage
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
    SELECT array_agg(a.id ORDER BY a.ord), array_agg(d.state ORDER BY a.ord), array_agg(d.retry_at ORDER BY a.ord),
           (SELECT array_agg(e.queue) FROM ended e WHERE e.state IN ('succeeded', 'failed', 'cancelled')),
           (SELECT array_agg(e.state) FROM ended e WHERE e.state IN ('succeeded', 'failed', 'cancelled')),
           (SELECT array_agg(e.id ORDER BY e.chain, e.id) FROM ended e WHERE e.chain IS NOT NULL),
           (SELECT array_agg(e.chain ORDER BY e.chain, e.id) FROM ended e WHERE e.chain IS NOT NULL),
           (SELECT array_agg(e.stage ORDER BY e.chain, e.id) FROM ended e WHERE e.chain IS NOT NULL),
           (SELECT array_agg(e.state ORDER BY e.chain, e.id) FROM ended e WHERE e.chain IS NOT NULL)
      INTO v_out_ids, v_out_states, v_out_retry, v_cq, v_cs, v_ch_ids, v_ch_names, v_ch_stages, v_ch_states
      FROM a LEFT JOIN decided d ON d.ord = a.ord;
    v_cn := array_fill(1::bigint, ARRAY[coalesce(cardinality(v_cq), 0)]);

    -- Chains: the failure policy for each task of a chain that ended failed or
    -- cancelled, then the chain's next stage is opened. The chain rows are held.
    FOR i IN 1 .. coalesce(cardinality(v_ch_ids), 0) LOOP
        IF v_ch_states[i] IN ('failed', 'cancelled') THEN
            v_cq := v_cq || ARRAY(SELECT readpast_chain_failed(v_ch_names[i], v_ch_ids[i], v_ch_stages[i], v_ch_states[i]));
        END IF;
    END LOOP;
    v_cs := v_cs || array_fill('cancelled'::text, ARRAY[coalesce(cardinality(v_cq), 0) - coalesce(cardinality(v_cs), 0)]);
    v_cn := v_cn || array_fill(1::bigint, ARRAY[coalesce(cardinality(v_cq), 0) - coalesce(cardinality(v_cn), 0)]);
    IF cardinality(v_cq) > 0 THEN
        PERFORM readpast_count(v_cq, v_cs, v_cn);
    END IF;
    IF v_ch_names IS NOT NULL THEN
        FOR v_chain IN SELECT DISTINCT c FROM unnest(v_ch_names) AS c ORDER BY c LOOP
            PERFORM readpast_refresh_chain(v_chain);
        END LOOP;
    END IF;

    RETURN QUERY SELECT * FROM unnest(v_out_ids, v_out_states, v_out_retry);
END
$$;

DROP FUNCTION readpast_end_plain(boolean, bigint[], bigint[], bigint[], text[], text[], text[], text[], text[],
    timestamptz[], timestamptz[], bigint[], text[]);
DROP FUNCTION readpast_end_state(boolean, text, boolean, integer, integer, integer);

SELECT readpast_pin_functions();
