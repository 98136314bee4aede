-- Fixes to the state machine and its safety, on top of 000002's functions.
--
-- * readpast_end_attempts: a task whose cancellation an operator requested
--   ends cancelled however its attempt ends (finished with any outcome,
--   released at shutdown, reclaimed after its lease expired). Before, a
--   release or a reclaim put it back to pending and it ran again.
-- * The functions the store calls are pinned to the schema they live in, with
--   pg_temp last: a transactional task's body runs in the same session as its
--   completion, and a temporary table it creates named like one of ours
--   (readpast_tasks) would otherwise be found first and take the completion's
--   writes. A function's SET search_path is in force for every statement it
--   runs, including the helper functions it calls.

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
               finished_at = CASE WHEN d.state = 'pending' THEN NULL ELSE now() END,
               last_error = coalesce(nullif(d.err, ''), t.last_error),
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

    -- Chains: the failure policy for each task of a chain that ended failed or
    -- cancelled, then the chain's next stage is opened. The chain rows are held.
    FOR r IN SELECT t.id, t.chain, t.stage, t.state FROM readpast_tasks t
              WHERE t.id = ANY (v_held) AND t.chain IS NOT NULL AND t.state IN ('failed', 'cancelled')
              ORDER BY t.chain, t.id LOOP
        PERFORM readpast_chain_failed(r.chain, r.id, r.stage, r.state);
    END LOOP;
    FOR r IN SELECT DISTINCT t.chain FROM readpast_tasks t
              WHERE t.id = ANY (v_held) AND t.chain IS NOT NULL ORDER BY t.chain LOOP
        PERFORM readpast_refresh_chain(r.chain);
    END LOOP;
END
$$;

-- readpast_pin_functions pins the store's entry points to the current schema.
-- Every later migration that replaces one of them calls it again: CREATE OR
-- REPLACE drops a function's SET clauses.
CREATE FUNCTION readpast_pin_functions() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
              WHERE p.pronamespace = current_schema()::regnamespace
                AND p.proname IN ('readpast_claim', 'readpast_enqueue', 'readpast_end_attempts',
                                  'readpast_cancel', 'readpast_retry') LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f, current_schema());
    END LOOP;
END
$$;

SELECT readpast_pin_functions();
