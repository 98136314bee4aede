-- The claim stays flat behind any backlog (docs/QUEUE.md, "Claiming behind a
-- backlog"), and retention finds finished tasks by index.
--
-- * delayed: a pending task whose available_at is still ahead is delayed and
--   kept out of the claim's indexes until it is due; the claim promotes the due
--   ones of its queue first. Before, 1M tasks delayed at a more urgent priority
--   sat at the head of the claim index and every claim read past all of them.
-- * The claim index is split: ungrouped ready tasks in claim order, and grouped
--   ready tasks by group, then claim order. A claim reads the groups that have
--   ready tasks in its queue (a skip scan: one index probe per group), keeps the
--   groups with free slots by their committed counters, and reads only those
--   groups' first tasks. Before, 1M pending tasks of a full group ahead in claim
--   order were read, and turned away, by every claim.
-- * readpast_tasks_finished: purges of finished tasks read by finished_at.

ALTER TABLE readpast_tasks ADD COLUMN delayed boolean NOT NULL DEFAULT false;
UPDATE readpast_tasks SET delayed = true WHERE state = 'pending' AND available_at > now();

DROP INDEX readpast_tasks_claim;
CREATE INDEX readpast_tasks_ready ON readpast_tasks (queue, priority, available_at, id)
    WHERE state = 'pending' AND NOT chain_wait AND NOT delayed AND group_name IS NULL;
CREATE INDEX readpast_tasks_ready_grouped ON readpast_tasks (queue, group_name, priority, available_at, id)
    WHERE state = 'pending' AND NOT chain_wait AND NOT delayed AND group_name IS NOT NULL;
CREATE INDEX readpast_tasks_delayed ON readpast_tasks (queue, available_at)
    WHERE state = 'pending' AND delayed;
CREATE INDEX readpast_tasks_finished ON readpast_tasks (finished_at)
    WHERE state IN ('succeeded', 'failed', 'cancelled');

-- readpast_claimed marks the tasks a claim took running, each under a new
-- fencing token, and returns them in claim order. started_at is the start of
-- this attempt: a reclaim logs the lost attempt from it.
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

-- Claim (docs/QUEUE.md, "Claiming"): leases up to p_limit claimable tasks of the
-- queue to p_owner and returns them running, in claim order. Locks, in order:
-- the queue row (capped queues only), then the group rows of the planned tasks
-- and the planned tasks themselves, both with SKIP LOCKED (never waiting). It
-- locks only groups it admits from and tasks it takes.
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
    v_plan_ids bigint[];      -- the plan: candidates in claim order
    v_plan_groups text[];     -- their groups ('' for none)
    v_groups text[] := '{}';  -- groups whose rows this claim holds, with their locked free slots
    v_free integer[] := '{}';
    v_taken integer[] := '{}';
    v_skipped text[] := '{}'; -- groups another transaction holds: not admitted this time
    v_new text[] := '{}';
    v_locked text[];
    v_lfree integer[];
    v_want bigint[];
    v_got bigint[];
    v_ids bigint[] := '{}';   -- taken
    v_pos integer;
    v_round integer := 0;
    v_offered boolean[];      -- plan positions offered in a round
    v_plan_free integer[];    -- committed free slots of each planned task's group
    v_tg text[];              -- groups counted while choosing which to lock
    v_tc integer[];
    v_k integer;
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

    -- 2. Due delayed tasks of the queue become ready (at most 1000 a claim,
    -- skipping rows someone else holds); most claims find none in one probe.
    UPDATE readpast_tasks t SET delayed = false
     WHERE t.id IN (SELECT d.id FROM readpast_tasks d
                     WHERE d.queue = p_queue AND d.state = 'pending' AND d.delayed AND d.available_at <= now()
                     ORDER BY d.available_at LIMIT 1000 FOR UPDATE SKIP LOCKED);

    -- 3. No grouped task can run in the queue (one index probe): the first
    -- v_n ready tasks, skipping rows other claimers hold, are the claim, in
    -- one statement. They are exactly the tasks it takes.
    IF NOT EXISTS (SELECT 1 FROM readpast_tasks t
                    WHERE t.queue = p_queue AND t.state = 'pending' AND NOT t.chain_wait AND NOT t.delayed
                      AND t.group_name IS NOT NULL) THEN
        v_ids := ARRAY(SELECT t.id FROM readpast_tasks t
                        WHERE t.queue = p_queue AND t.state = 'pending' AND NOT t.chain_wait AND NOT t.delayed
                          AND t.group_name IS NULL
                        ORDER BY t.priority, t.available_at, t.id LIMIT v_n FOR UPDATE OF t SKIP LOCKED);
        IF cardinality(v_ids) = 0 THEN
            RETURN;
        END IF;
        RETURN QUERY SELECT * FROM readpast_claimed(v_ids, p_owner, p_lease_us);
        RETURN;
    END IF;

    -- The plan, from committed rows, locking nothing: the first 2 v_n + 16
    -- ungrouped ready tasks, and of every group with ready tasks in the queue
    -- and free slots by its committed counter, its first min(free, v_n) tasks
    -- and two more (the extra ones in case other claimers hold some); merged
    -- in claim order. Groups without free slots are never read past.
    WITH RECURSIVE grp AS (
        (SELECT t.group_name FROM readpast_tasks t
          WHERE t.queue = p_queue AND t.state = 'pending' AND NOT t.chain_wait AND NOT t.delayed
            AND t.group_name IS NOT NULL
          ORDER BY t.group_name LIMIT 1)
        UNION ALL
        SELECT (SELECT t.group_name FROM readpast_tasks t
                 WHERE t.queue = p_queue AND t.state = 'pending' AND NOT t.chain_wait AND NOT t.delayed
                   AND t.group_name IS NOT NULL AND t.group_name > grp.group_name
                 ORDER BY t.group_name LIMIT 1)
          FROM grp WHERE grp.group_name IS NOT NULL
    ),
    open_groups AS (
        SELECT g.name, g.max_running - g.running AS free
          FROM grp JOIN readpast_groups g ON g.name = grp.group_name
         WHERE g.running < g.max_running
    ),
    cand AS (
        (SELECT t.id, t.priority, t.available_at, '' AS group_name, 0 AS free FROM readpast_tasks t
          WHERE t.queue = p_queue AND t.state = 'pending' AND NOT t.chain_wait AND NOT t.delayed
            AND t.group_name IS NULL
          ORDER BY t.priority, t.available_at, t.id LIMIT 2 * v_n + 16)
        UNION ALL
        SELECT c.id, c.priority, c.available_at, o.name, o.free
          FROM open_groups o CROSS JOIN LATERAL (
               SELECT t.id, t.priority, t.available_at FROM readpast_tasks t
                WHERE t.queue = p_queue AND t.group_name = o.name AND t.state = 'pending'
                  AND NOT t.chain_wait AND NOT t.delayed
                ORDER BY t.priority, t.available_at, t.id LIMIT least(o.free, v_n) + 2) c
    )
    SELECT coalesce(array_agg(x.id ORDER BY x.priority, x.available_at, x.id), '{}'),
           coalesce(array_agg(x.group_name ORDER BY x.priority, x.available_at, x.id), '{}'),
           coalesce(array_agg(x.free ORDER BY x.priority, x.available_at, x.id), '{}')
      INTO v_plan_ids, v_plan_groups, v_plan_free
      FROM (SELECT * FROM cand ORDER BY priority, available_at, id LIMIT 2 * v_n + 16) x;
    IF cardinality(v_plan_ids) = 0 THEN
        RETURN;
    END IF;

    -- 4. Take tasks in plan order, in up to three rounds. A round offers the
    -- next tasks of the plan its groups can admit; first it locks the groups
    -- of those tasks it does not hold yet (name order, SKIP LOCKED: a group
    -- another claimer or finisher holds is passed over), and their locked
    -- counters decide. Then it locks the offered tasks that are still
    -- claimable (SKIP LOCKED: another claimer's are passed over). So the claim
    -- locks the groups it admits from and the tasks it takes, and no others.
    v_offered := array_fill(false, ARRAY[cardinality(v_plan_ids)]);
    WHILE cardinality(v_ids) < v_n AND v_round < 3 LOOP
        v_round := v_round + 1;
        -- The groups of the next tasks not offered yet, as many as could be taken.
        -- A task counts as one that could be taken while its group's
        -- committed free slots last (v_plan_free).
        v_new := '{}';
        v_tg := '{}';
        v_tc := '{}';
        v_k := 0;
        FOR i IN 1 .. cardinality(v_plan_ids) LOOP
            EXIT WHEN v_k >= v_n - cardinality(v_ids);
            CONTINUE WHEN v_offered[i];
            IF v_plan_groups[i] = '' THEN
                v_k := v_k + 1;
                CONTINUE;
            END IF;
            CONTINUE WHEN v_plan_groups[i] = ANY (v_skipped); -- not admitted this time
            v_pos := array_position(v_tg, v_plan_groups[i]);
            IF v_pos IS NULL THEN
                v_tg := v_tg || v_plan_groups[i];
                v_tc := v_tc || 0;
                v_pos := cardinality(v_tg);
            END IF;
            CONTINUE WHEN v_tc[v_pos] >= v_plan_free[i];
            v_tc[v_pos] := v_tc[v_pos] + 1;
            v_k := v_k + 1;
            IF NOT (v_plan_groups[i] = ANY (v_groups)) AND NOT (v_plan_groups[i] = ANY (v_new)) THEN
                v_new := array_append(v_new, v_plan_groups[i]);
            END IF;
        END LOOP;
        IF cardinality(v_new) > 0 THEN
            SELECT coalesce(array_agg(g.name ORDER BY g.name), '{}'),
                   coalesce(array_agg(g.max_running - g.running ORDER BY g.name), '{}')
              INTO v_locked, v_lfree
              FROM (SELECT g.name, g.max_running, g.running FROM readpast_groups g
                     WHERE g.name = ANY (v_new) ORDER BY g.name FOR UPDATE SKIP LOCKED) g;
            v_groups := v_groups || v_locked;
            v_free := v_free || v_lfree;
            v_taken := v_taken || array_fill(0, ARRAY[cardinality(v_locked)]);
            v_skipped := v_skipped || ARRAY(SELECT x FROM unnest(v_new) AS x WHERE NOT (x = ANY (v_locked)));
        END IF;
        -- Offer, in plan order, the tasks not offered yet that their groups
        -- admit now (a slot given back by a task another claimer held lets
        -- the group's next task in).
        v_want := '{}';
        FOR i IN 1 .. cardinality(v_plan_ids) LOOP
            EXIT WHEN cardinality(v_want) >= v_n - cardinality(v_ids);
            CONTINUE WHEN v_offered[i];
            IF v_plan_groups[i] = '' THEN
                v_offered[i] := true;
                v_want := v_want || v_plan_ids[i];
            ELSE
                v_pos := array_position(v_groups, v_plan_groups[i]);
                IF v_pos IS NOT NULL AND v_taken[v_pos] < v_free[v_pos] THEN
                    v_taken[v_pos] := v_taken[v_pos] + 1; -- given back below if not taken
                    v_offered[i] := true;
                    v_want := v_want || v_plan_ids[i];
                ELSIF v_pos IS NULL AND NOT (v_plan_groups[i] = ANY (v_skipped)) THEN
                    EXIT; -- its group is not locked yet: the next round locks it
                END IF;
            END IF;
        END LOOP;
        EXIT WHEN cardinality(v_want) = 0 AND cardinality(v_new) = 0;
        CONTINUE WHEN cardinality(v_want) = 0;
        v_got := ARRAY(SELECT t.id FROM readpast_tasks t
                        WHERE t.id = ANY (v_want) AND t.state = 'pending' AND NOT t.chain_wait AND NOT t.delayed
                        ORDER BY t.id FOR UPDATE OF t SKIP LOCKED);
        v_ids := v_ids || v_got;
        -- Slots offered to tasks that were not taken go back to their groups.
        FOR i IN 1 .. cardinality(v_want) LOOP
            IF NOT (v_want[i] = ANY (v_got)) THEN
                v_pos := array_position(v_groups, v_plan_groups[array_position(v_plan_ids, v_want[i])]);
                IF v_pos IS NOT NULL THEN
                    v_taken[v_pos] := v_taken[v_pos] - 1;
                END IF;
            END IF;
        END LOOP;
    END LOOP;
    IF cardinality(v_ids) = 0 THEN
        RETURN;
    END IF;

    UPDATE readpast_groups g SET running = g.running + x.k
      FROM unnest(v_groups, v_taken) AS x(name, k)
     WHERE g.name = x.name AND x.k > 0;

    RETURN QUERY SELECT * FROM readpast_claimed(v_ids, p_owner, p_lease_us);
END
$$;

-- Enqueue as in 000001; a task whose available_at is ahead is written delayed.
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
        INSERT INTO readpast_tasks (queue, body, priority, available_at, delayed, group_name, chain, stage, chain_wait,
                                    continue_on_failure, max_attempts, timeout_ms, transactional, created_by)
        SELECT x.q, x.b, x.p, a.at, a.at > now(), nullif(x.g, ''),
               nullif(x.c, ''), x.s, x.c <> '', x.k, x.m, x.tm, x.tr, x.cb
          FROM unnest(p_queue, p_body, p_priority, p_available_at, p_delay_us, p_group, p_chain, p_stage,
                      p_max_attempts, p_timeout_ms, p_transactional, p_continue, p_created_by)
               WITH ORDINALITY AS x(q, b, p, at, d, g, c, s, m, tm, tr, k, cb, ord)
               CROSS JOIN LATERAL (SELECT coalesce(x.at, now() + x.d * interval '1 microsecond') AS at) a
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

-- End attempts as in 000003; a task pending again after a back-off is delayed
-- until it is due (a release is ready at once), and a success clears the task's
-- last_error (before, a task that succeeded kept an earlier attempt's error).
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

-- Retry as in 000001; the task is ready now.
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
       SET state = 'pending', available_at = now(), delayed = false, retry_base = attempts, finished_at = NULL,
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

SELECT readpast_pin_functions();
