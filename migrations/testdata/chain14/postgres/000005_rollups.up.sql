-- Costs that do not grow with history (docs/QUEUE.md, "Counts and the
-- throughput series"): the dashboard, the API and /metrics read finished counts
-- and the throughput chart from small rollups kept by the transactions that
-- change them, instead of a GROUP BY over all retained history and up to 50,000
-- log rows every few seconds. Unfinished counts still come from the tasks (the
-- partial indexes of pending and running tasks), which do not grow with history.
--
-- * readpast_counts: finished tasks per queue and final state. Changed, in the
--   same transaction, by every change into or out of a final state (end of an
--   attempt, the chain failure policy, cancel, retry, purge), always through
--   readpast_count, once per transaction with its rows in key order, so two
--   transactions never wait for each other's rows in a cycle.
-- * readpast_throughput: attempts per minute and per hour, queue and outcome,
--   with the time they ran; written by readpast_end_attempts with the log rows.
--   Minute rows are kept 48 hours, hour rows 8 days (Store.PurgeRollups).
--
-- Lock order (000001's, extended): queue row, chain rows, task rows, group rows,
-- throughput rows, count rows, then inserts that nobody waits for.

CREATE TABLE readpast_counts (
    queue text NOT NULL,
    state text NOT NULL CHECK (state IN ('succeeded', 'failed', 'cancelled')),
    n     bigint NOT NULL,
    PRIMARY KEY (queue, state)
);
INSERT INTO readpast_counts (queue, state, n)
SELECT queue, state, count(*) FROM readpast_tasks
 WHERE state IN ('succeeded', 'failed', 'cancelled') GROUP BY queue, state;

CREATE TABLE readpast_throughput (
    span    text NOT NULL CHECK (span IN ('minute', 'hour')),
    bucket  timestamptz NOT NULL,
    queue   text NOT NULL,
    outcome text NOT NULL,
    n       bigint NOT NULL,
    busy_ms bigint NOT NULL,
    PRIMARY KEY (span, bucket, queue, outcome)
);
INSERT INTO readpast_throughput (span, bucket, queue, outcome, n, busy_ms)
SELECT sp.span, date_trunc(sp.span, a.finished_at), a.queue, a.outcome, count(*), sum(a.duration_ms)
  FROM readpast_attempts a CROSS JOIN (VALUES ('minute', interval '48 hours'), ('hour', interval '8 days')) AS sp(span, keep)
 WHERE a.finished_at >= now() - sp.keep
 GROUP BY 1, 2, 3, 4;

-- readpast_count adds n to the finished count of each (queue, state) given
-- (parallel arrays; negative n subtracts), summed per key and written in key
-- order.
CREATE FUNCTION readpast_count(p_queues text[], p_states text[], p_n bigint[]) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO readpast_counts AS c (queue, state, n)
    SELECT x.q, x.s, sum(x.n) FROM unnest(p_queues, p_states, p_n) AS x(q, s, n)
     WHERE x.q IS NOT NULL GROUP BY x.q, x.s HAVING sum(x.n) <> 0 ORDER BY x.q, x.s
    ON CONFLICT (queue, state) DO UPDATE SET n = c.n + excluded.n
$$;

DROP FUNCTION readpast_chain_failed(text, bigint, integer, text);
CREATE FUNCTION readpast_chain_failed(p_chain text, p_task_id bigint, p_stage integer, p_state text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce((SELECT continue_on_failure FROM readpast_chains WHERE name = p_chain), false) THEN
        RETURN;
    END IF;
    -- The text is queue.ChainCancelledError. The queue of each task it
    -- cancels is returned, for the caller's finished counts.
    RETURN QUERY
    UPDATE readpast_tasks
       SET state = 'cancelled', chain_cancelled = true, chain_wait = false, finished_at = now(),
           last_error = format('chain %s: task %s at stage %s ended %s', p_chain, p_task_id, p_stage, p_state)
     WHERE chain = p_chain AND state = 'pending' AND stage > p_stage
    RETURNING queue;
END
$$;

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

CREATE OR REPLACE FUNCTION readpast_cancel(p_id bigint, p_actor text,
                                OUT out_found boolean, OUT out_changed boolean, OUT out_state text)
LANGUAGE plpgsql AS $$
DECLARE
    v_chain text;
    v_cq text[];
    t readpast_tasks;
BEGIN
    out_changed := false;
    -- The chain (immutable per task) is read first, so its row is locked before
    -- the task's, in the global order.
    SELECT chain INTO v_chain FROM readpast_tasks WHERE id = p_id;
    out_found := FOUND;
    IF NOT out_found THEN
        RETURN;
    END IF;
    IF v_chain IS NOT NULL THEN
        PERFORM 1 FROM readpast_chains WHERE name = v_chain FOR UPDATE;
    END IF;
    SELECT * INTO t FROM readpast_tasks WHERE id = p_id FOR UPDATE;
    out_state := t.state;
    IF t.state = 'running' THEN
        UPDATE readpast_tasks SET cancel_requested = true, finished_by = p_actor WHERE id = p_id;
    ELSIF t.state = 'pending' THEN
        UPDATE readpast_tasks
           SET state = 'cancelled', finished_at = now(), finished_by = p_actor, chain_wait = false,
               last_error = 'cancelled by ' || p_actor
         WHERE id = p_id;
        out_state := 'cancelled';
        v_cq := ARRAY[t.queue];
        IF v_chain IS NOT NULL THEN
            v_cq := v_cq || ARRAY(SELECT readpast_chain_failed(v_chain, p_id, t.stage, 'cancelled'));
            PERFORM readpast_refresh_chain(v_chain);
        END IF;
        PERFORM readpast_count(v_cq, array_fill('cancelled'::text, ARRAY[cardinality(v_cq)]),
                               array_fill(1::bigint, ARRAY[cardinality(v_cq)]));
    ELSE
        RETURN;
    END IF;
    out_changed := true;
    INSERT INTO readpast_audit (actor, action, target, detail) VALUES (p_actor, 'cancel', 'task ' || p_id, out_state);
END
$$;

CREATE OR REPLACE FUNCTION readpast_retry(p_id bigint, p_actor text,
                               OUT out_found boolean, OUT out_changed boolean, OUT out_state text)
LANGUAGE plpgsql AS $$
DECLARE
    v_chain text;
    v_cq text[];
    t readpast_tasks;
BEGIN
    out_changed := false;
    SELECT chain INTO v_chain FROM readpast_tasks WHERE id = p_id;
    out_found := FOUND;
    IF NOT out_found THEN
        RETURN;
    END IF;
    IF v_chain IS NOT NULL THEN
        PERFORM 1 FROM readpast_chains WHERE name = v_chain FOR UPDATE;
    END IF;
    SELECT * INTO t FROM readpast_tasks WHERE id = p_id FOR UPDATE;
    out_state := t.state;
    IF t.state NOT IN ('failed', 'cancelled') THEN
        RETURN;
    END IF;
    UPDATE readpast_tasks
       SET state = 'pending', available_at = now(), delayed = false, retry_base = attempts, finished_at = NULL,
           finished_by = NULL, cancel_requested = false, chain_cancelled = false
     WHERE id = p_id;
    IF v_chain IS NOT NULL THEN
        WITH reopened AS (
            UPDATE readpast_tasks SET state = 'pending', chain_cancelled = false, finished_at = NULL
             WHERE chain = v_chain AND state = 'cancelled' AND chain_cancelled AND stage > t.stage
            RETURNING queue)
        SELECT array_agg(queue) INTO v_cq FROM reopened;
        PERFORM readpast_refresh_chain(v_chain);
    END IF;
    -- The task and the reopened ones leave the finished counts.
    PERFORM readpast_count(ARRAY[t.queue] || coalesce(v_cq, '{}'),
                           ARRAY[t.state] || array_fill('cancelled'::text, ARRAY[coalesce(cardinality(v_cq), 0)]),
                           array_fill(-1::bigint, ARRAY[1 + coalesce(cardinality(v_cq), 0)]));
    out_changed := true;
    INSERT INTO readpast_audit (actor, action, target, detail) VALUES (p_actor, 'retry', 'task ' || p_id, '');
END
$$;

SELECT readpast_pin_functions();
