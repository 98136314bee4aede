-- Restores version 3: the one claim index, 000002's claim, 000001's enqueue
-- and retry, 000003's end_attempts; no delayed column, no finished index.
CREATE OR REPLACE FUNCTION readpast_claim(p_queue text, p_owner text, p_limit integer, p_lease_us bigint)
RETURNS SETOF readpast_tasks
LANGUAGE plpgsql
SET jit = off
AS $$
DECLARE
    v_paused boolean;
    v_cap integer;
    v_running bigint;
    v_n integer := p_limit;
    v_scan integer;
    v_cand refcursor;
    r record;
    v_ids bigint[] := '{}';   -- admitted, in claim order
    v_grouped bigint;         -- how many of the fast path's candidates are in a group
    v_groups text[] := '{}';  -- groups met, with their free slots and admissions
    v_free integer[] := '{}';
    v_taken integer[] := '{}';
    v_pos integer;
    v_f integer;
BEGIN
    -- 1. Queue settings. Only a capped queue locks its row, so claimers of an
    -- uncapped queue never touch a shared row.
    SELECT paused, max_running INTO v_paused, v_cap FROM readpast_queues WHERE name = p_queue;
    IF v_paused THEN
        RETURN;
    END IF;
    IF v_cap IS NOT NULL THEN
        SELECT paused, max_running INTO v_paused, v_cap FROM readpast_queues WHERE name = p_queue FOR UPDATE;
        IF v_paused THEN
            RETURN;
        END IF;
        IF v_cap IS NOT NULL THEN
            SELECT count(*) INTO v_running FROM readpast_tasks WHERE queue = p_queue AND state = 'running';
            v_n := least(v_n, v_cap - v_running);
            IF v_n <= 0 THEN
                RETURN;
            END IF;
        END IF;
    END IF;

    -- 2. Fast path: the first v_n claimable candidates, skipping rows other
    -- claimers hold, locked in one statement. Tasks whose group is full by its
    -- committed counter are left out here as in the cursor below. When none of
    -- the candidates is in a group, no admission is needed: they are the claim.
    SELECT coalesce(array_agg(c.id), '{}'), count(c.group_name) INTO v_ids, v_grouped
      FROM (SELECT t.id, t.group_name
              FROM readpast_tasks t
             WHERE t.queue = p_queue AND t.state = 'pending' AND NOT t.chain_wait
               AND t.available_at <= now()
               AND (t.group_name IS NULL OR NOT EXISTS (
                       SELECT 1 FROM readpast_groups g
                        WHERE g.name = t.group_name AND g.running >= g.max_running))
             ORDER BY t.priority, t.available_at, t.id
             LIMIT v_n
               FOR UPDATE OF t SKIP LOCKED) c;

    IF v_grouped > 0 THEN
        -- 3. Group admission, one candidate at a time in claim order. The rows
        -- the fast path locked stay locked until this short transaction ends
        -- (the cursor meets them again: a transaction does not skip its own
        -- locks). A cursor locks a row only when it is fetched, so the claim
        -- locks the tasks it takes and the few that admission turns away, never
        -- a whole window that other claimers would then have to skip.
        v_ids := '{}';
        OPEN v_cand FOR
            SELECT t.id, t.group_name
              FROM readpast_tasks t
             WHERE t.queue = p_queue AND t.state = 'pending' AND NOT t.chain_wait
               AND t.available_at <= now()
               AND (t.group_name IS NULL OR NOT EXISTS (
                       SELECT 1 FROM readpast_groups g
                        WHERE g.name = t.group_name AND g.running >= g.max_running))
             ORDER BY t.priority, t.available_at, t.id
               FOR UPDATE OF t SKIP LOCKED;
        -- The scan is bounded, so a run of tasks that admission turns away cannot
        -- make one claim walk the whole queue.
        v_scan := v_n * 4 + 16;
        WHILE cardinality(v_ids) < v_n AND v_scan > 0 LOOP
            FETCH v_cand INTO r;
            EXIT WHEN NOT FOUND;
            v_scan := v_scan - 1;
            IF r.group_name IS NULL THEN
                v_ids := v_ids || r.id;
                CONTINUE;
            END IF;
            -- The group row is locked the first time one of its tasks comes up,
            -- skipping it when another transaction holds it; only the locked
            -- counter decides, and this batch's own admissions count.
            v_pos := array_position(v_groups, r.group_name);
            IF v_pos IS NULL THEN
                SELECT g.max_running - g.running INTO v_f
                  FROM readpast_groups g WHERE g.name = r.group_name
                   FOR UPDATE SKIP LOCKED;
                IF NOT FOUND THEN
                    v_f := 0;
                END IF;
                v_groups := v_groups || r.group_name;
                v_free := v_free || v_f;
                v_taken := v_taken || 0;
                v_pos := cardinality(v_groups);
            END IF;
            IF v_taken[v_pos] < v_free[v_pos] THEN
                v_taken[v_pos] := v_taken[v_pos] + 1;
                v_ids := v_ids || r.id;
            END IF;
        END LOOP;
        CLOSE v_cand;

        UPDATE readpast_groups g SET running = g.running + x.k
          FROM unnest(v_groups, v_taken) AS x(name, k)
         WHERE g.name = x.name AND x.k > 0;
    END IF;
    IF cardinality(v_ids) = 0 THEN
        RETURN;
    END IF;

    -- 4. The admitted tasks run, each under a new fencing token. started_at is
    -- the start of this attempt: a reclaim logs the lost attempt from it.
    RETURN QUERY
    WITH claimed AS (
        UPDATE readpast_tasks t
           SET state = 'running', attempts = t.attempts + 1, lease_owner = p_owner,
               lease_token = readpast_new_token(),
               lease_expires_at = now() + p_lease_us * interval '1 microsecond',
               started_at = now(), cancel_requested = false, session_id = NULL
         WHERE t.id = ANY (v_ids)
        RETURNING t.*
    )
    SELECT * FROM claimed ORDER BY claimed.priority, claimed.available_at, claimed.id;
END
$$;

CREATE OR REPLACE FUNCTION readpast_enqueue(
    p_queue text[], p_body text[], p_priority integer[], p_available_at timestamptz[], p_delay_us bigint[],
    p_group text[], p_chain text[], p_stage integer[], p_max_attempts integer[], p_timeout_ms bigint[],
    p_transactional boolean[], p_continue boolean[], p_created_by text[])
RETURNS SETOF bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_name text;
BEGIN
    -- Sorted inserts: two enqueuers creating the same new names wait in one order.
    INSERT INTO readpast_queues (name)
    SELECT DISTINCT q FROM unnest(p_queue) AS q ORDER BY q
    ON CONFLICT DO NOTHING;
    INSERT INTO readpast_groups (name)
    SELECT DISTINCT g FROM unnest(p_group) AS g WHERE g <> '' ORDER BY g
    ON CONFLICT DO NOTHING;
    -- Chains are created or locked (ON CONFLICT DO UPDATE locks the row even when
    -- its WHERE is false) in name order; continue_on_failure, once set, stays.
    INSERT INTO readpast_chains AS c (name, continue_on_failure)
    SELECT x.c, bool_or(x.k) FROM unnest(p_chain, p_continue) AS x(c, k)
     WHERE x.c <> '' GROUP BY x.c ORDER BY x.c
    ON CONFLICT (name) DO UPDATE SET continue_on_failure = true
     WHERE excluded.continue_on_failure AND NOT c.continue_on_failure;

    -- Identity values are drawn in the order rows leave the sorted SELECT, so the
    -- ascending ids are the input order.
    RETURN QUERY
    WITH ins AS (
        INSERT INTO readpast_tasks (queue, body, priority, available_at, group_name, chain, stage, chain_wait,
                                    continue_on_failure, max_attempts, timeout_ms, transactional, created_by)
        SELECT x.q, x.b, x.p, coalesce(x.at, now() + x.d * interval '1 microsecond'), nullif(x.g, ''),
               nullif(x.c, ''), x.s, x.c <> '', x.k, x.m, x.tm, x.tr, x.cb
          FROM unnest(p_queue, p_body, p_priority, p_available_at, p_delay_us, p_group, p_chain, p_stage,
                      p_max_attempts, p_timeout_ms, p_transactional, p_continue, p_created_by)
               WITH ORDINALITY AS x(q, b, p, at, d, g, c, s, m, tm, tr, k, cb, ord)
         ORDER BY x.ord
        RETURNING id
    )
    SELECT ins.id FROM ins ORDER BY ins.id;

    -- New chain tasks were written waiting; the refresh opens the lowest stage.
    FOR v_name IN SELECT DISTINCT c FROM unnest(p_chain) AS c WHERE c <> '' ORDER BY c LOOP
        PERFORM readpast_refresh_chain(v_name);
    END LOOP;
    -- Wake idle workers of other nodes (delivered at commit).
    FOR v_name IN SELECT DISTINCT q FROM unnest(p_queue) AS q LOOP
        PERFORM pg_notify('readpast_enqueue', v_name);
    END LOOP;
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

CREATE OR REPLACE FUNCTION readpast_retry(p_id bigint, p_actor text,
                               OUT out_found boolean, OUT out_changed boolean, OUT out_state text)
LANGUAGE plpgsql AS $$
DECLARE
    v_chain text;
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
       SET state = 'pending', available_at = now(), retry_base = attempts, finished_at = NULL,
           finished_by = NULL, cancel_requested = false, chain_cancelled = false
     WHERE id = p_id;
    IF v_chain IS NOT NULL THEN
        UPDATE readpast_tasks SET state = 'pending', chain_cancelled = false, finished_at = NULL
         WHERE chain = v_chain AND state = 'cancelled' AND chain_cancelled AND stage > t.stage;
        PERFORM readpast_refresh_chain(v_chain);
    END IF;
    out_changed := true;
    INSERT INTO readpast_audit (actor, action, target, detail) VALUES (p_actor, 'retry', 'task ' || p_id, '');
END
$$;

DROP FUNCTION readpast_claimed(bigint[], text, bigint);
DROP INDEX readpast_tasks_finished;
DROP INDEX readpast_tasks_delayed;
DROP INDEX readpast_tasks_ready_grouped;
DROP INDEX readpast_tasks_ready;
CREATE INDEX readpast_tasks_claim ON readpast_tasks (queue, priority, available_at, id)
    WHERE state = 'pending' AND NOT chain_wait;
ALTER TABLE readpast_tasks DROP COLUMN delayed;

SELECT readpast_pin_functions();
