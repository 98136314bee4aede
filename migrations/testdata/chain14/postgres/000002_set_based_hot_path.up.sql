-- The hot path, set-based (docs/BENCHMARKS.md, "Where the time of one task goes").
--
-- * readpast_claim takes the common case in one statement: the first p_limit
--   candidates in claim order, locked with SKIP LOCKED. Only when one of them
--   belongs to a concurrency group does it fall back to the admission cursor of
--   000001, which walks candidates one by one.
-- * readpast_end_attempts ends a whole batch in one statement (decide, update the
--   tasks, write the log rows, adjust the group counters) instead of a loop of
--   three statements per attempt; chains keep their per-chain steps.
-- * Tasks named by id are found by primary key, whatever the statistics say
--   (see v_held below).
-- * Both run with jit = off. The candidate query of the claim is planned for the
--   whole pending set, so with a few hundred thousand pending tasks and a heap out
--   of claim order its estimated cost passes jit_above_cost and every claim spent
--   about 130 ms compiling; JIT never pays off for statements that touch a few
--   rows.

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

-- Ends attempts (Finish, Release, ReclaimExpired): one execution-log row each and
-- the task's next state, as queue.AfterAttempt decides. Parallel arrays, one
-- element per attempt; a row with a NULL state means that lease was not current
-- and nothing changed (also for a repeat of an element earlier in the batch).
-- p_reclaim takes only leases that have expired and skips tasks whose holder is
-- finishing them right now.
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
               t.session_id AS task_session, t.group_name
          FROM a JOIN readpast_tasks t ON t.id = a.id AND t.lease_token = a.token AND t.state || '' = 'running'
         WHERE a.id = ANY (v_held)
         ORDER BY a.id, a.ord
    ),
    decided AS (
        SELECT h.*, s.state,
               CASE WHEN p_release THEN now()
                    WHEN s.state = 'pending' THEN now() + readpast_backoff(h.attempts - h.retry_base)
               END AS retry_at
          FROM held h CROSS JOIN LATERAL (SELECT CASE
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
