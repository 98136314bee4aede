-- Restores the functions of 000001: the per-row claim cursor and finish loop.
CREATE OR REPLACE FUNCTION readpast_claim(p_queue text, p_owner text, p_limit integer, p_lease_us bigint)
RETURNS SETOF readpast_tasks
LANGUAGE plpgsql AS $$
DECLARE
    v_paused boolean;
    v_cap integer;
    v_running bigint;
    v_n integer := p_limit;
    v_scan integer;
    v_cand refcursor;
    r record;
    v_ids bigint[] := '{}';   -- admitted, in claim order
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

    -- 2. Candidates in claim order from the partial index, skipping rows other
    -- claimers hold and tasks whose group is full by its committed counter. A
    -- cursor locks a row only when it is fetched, so the claim locks the tasks it
    -- takes and the few that group admission turns away, never a whole window
    -- that other claimers would then have to skip.
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
        -- 3. Group admission: the group row is locked the first time one of its
        -- tasks comes up, skipping it when another transaction holds it; only the
        -- locked counter decides, and this batch's own admissions count.
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
    IF cardinality(v_ids) = 0 THEN
        RETURN;
    END IF;

    UPDATE readpast_groups g SET running = g.running + x.k
      FROM unnest(v_groups, v_taken) AS x(name, k)
     WHERE g.name = x.name AND x.k > 0;

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

CREATE OR REPLACE FUNCTION readpast_end_attempts(
    p_release boolean, p_reclaim boolean,
    p_ids bigint[], p_tokens bigint[], p_outcomes text[], p_errors text[],
    p_nodes text[], p_workers text[], p_sessions text[],
    p_started timestamptz[], p_finished timestamptz[], p_rows bigint[], p_messages text[])
RETURNS TABLE (out_id bigint, out_state text, out_retry_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    v_held bigint[];
    v_chains text[] := '{}';
    v_chain text;
    v_state text;
    v_retry timestamptz;
    t readpast_tasks;
BEGIN
    -- Locks in the global order: chains, tasks, groups.
    PERFORM 1 FROM readpast_chains
     WHERE name IN (SELECT x.chain FROM readpast_tasks x WHERE x.id = ANY (p_ids) AND x.chain IS NOT NULL)
     ORDER BY name FOR UPDATE;
    IF p_reclaim THEN
        v_held := ARRAY(
            SELECT x.id FROM readpast_tasks x JOIN unnest(p_ids, p_tokens) AS l(id, token)
                ON x.id = l.id AND x.lease_token = l.token
             WHERE x.state = 'running' AND x.lease_expires_at < now()
             ORDER BY x.id FOR UPDATE OF x SKIP LOCKED);
    ELSE
        v_held := ARRAY(
            SELECT x.id FROM readpast_tasks x JOIN unnest(p_ids, p_tokens) AS l(id, token)
                ON x.id = l.id AND x.lease_token = l.token
             WHERE x.state = 'running'
             ORDER BY x.id FOR UPDATE OF x);
    END IF;
    PERFORM 1 FROM readpast_groups
     WHERE name IN (SELECT x.group_name FROM readpast_tasks x WHERE x.id = ANY (v_held) AND x.group_name IS NOT NULL)
     ORDER BY name FOR UPDATE;

    FOR i IN 1 .. coalesce(array_length(p_ids, 1), 0) LOOP
        out_id := p_ids[i];
        out_state := NULL;
        out_retry_at := NULL;
        -- Re-read under the lock: an earlier element of this batch may have ended it.
        SELECT * INTO t FROM readpast_tasks x
         WHERE x.id = p_ids[i] AND x.lease_token = p_tokens[i] AND x.state = 'running' AND x.id = ANY (v_held);
        IF NOT FOUND THEN
            RETURN NEXT;
            CONTINUE;
        END IF;

        v_retry := NULL;
        IF p_release THEN
            v_state := 'pending';
            v_retry := now();
        ELSIF p_outcomes[i] = 'succeeded' THEN
            v_state := 'succeeded';
        ELSIF p_outcomes[i] = 'cancelled' THEN
            v_state := 'cancelled';
        ELSIF t.attempts - t.retry_base < t.max_attempts THEN
            v_state := 'pending';
            v_retry := now() + readpast_backoff(t.attempts - t.retry_base);
        ELSE
            v_state := 'failed';
        END IF;

        UPDATE readpast_tasks
           SET state = v_state, available_at = coalesce(v_retry, available_at),
               finished_at = CASE WHEN v_state = 'pending' THEN NULL ELSE now() END,
               last_error = coalesce(nullif(p_errors[i], ''), last_error),
               lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, cancel_requested = false
         WHERE id = t.id;
        IF t.group_name IS NOT NULL THEN
            UPDATE readpast_groups SET running = greatest(running - 1, 0) WHERE name = t.group_name;
        END IF;
        INSERT INTO readpast_attempts (task_id, attempt, queue, node, worker, session_id, started_at, finished_at,
                                       duration_ms, outcome, error, rows_affected, messages)
        SELECT t.id, t.attempts, t.queue, coalesce(p_nodes[i], ''), coalesce(p_workers[i], ''),
               coalesce(nullif(p_sessions[i], ''), t.session_id, ''), ts.s, ts.f,
               greatest(0, (extract(epoch FROM ts.f - ts.s) * 1000)::bigint), p_outcomes[i],
               coalesce(p_errors[i], ''), coalesce(p_rows[i], 0), coalesce(p_messages[i], '')
          FROM (SELECT coalesce(p_started[i], p_finished[i], now()) AS s, coalesce(p_finished[i], now()) AS f) ts;

        IF t.chain IS NOT NULL THEN
            IF v_state IN ('failed', 'cancelled') THEN
                PERFORM readpast_chain_failed(t.chain, t.id, t.stage, v_state);
            END IF;
            v_chains := v_chains || t.chain;
        END IF;
        out_state := v_state;
        out_retry_at := v_retry;
        RETURN NEXT;
    END LOOP;

    FOR v_chain IN SELECT DISTINCT c FROM unnest(v_chains) AS c ORDER BY c LOOP
        PERFORM readpast_refresh_chain(v_chain);
    END LOOP;
END
$$;
