-- A leaner hot path (docs/BENCHMARKS.md, "ReadPast and River"): what the
-- profile of a drain pointed at.
--
-- * The finish read the finished counts of its batch back with a plan that
--   scanned the partial index of every finished task: its cost grew with
--   history. The counts now come from the rows the finish updates.
-- * Fewer index entries per state change. Every update of a task writes an
--   entry into each index whose predicate the new row matches (no HOT update:
--   the state is in the partial indexes' predicates). The three full indexes
--   of the dashboard's lists, (state, id), (queue, id) and (queue, state, id),
--   became one, readpast_tasks_list (queue, state, id), that leaves running
--   tasks out: a claim now writes 2 entries instead of 5 (the primary key and
--   readpast_tasks_running), a finish 3 instead of 5. The lists read it per
--   state (running tasks, never more than the workers, by
--   readpast_tasks_running); a list of one state over all queues reads it per
--   queue (internal/queue/postgres/read.go). The log's (queue, id) and
--   (outcome, id) became readpast_attempts_list (queue, outcome, id) the same
--   way: 4 entries per attempt instead of 5.
-- * The fencing token is the attempt number in the high bits and 32 random
--   bits below it: every claim of a task gets a token that no earlier claim of
--   it had (attempts only grow), at a fraction of the cost of an md5 of a
--   random UUID per claim.
-- * Fewer statements per call, each of which costs an executor start and
--   stop whatever its rows: the claim reads the queue's settings and whether
--   it has due delayed or ready grouped tasks in one statement and marks the
--   taken tasks running inline (readpast_claimed, an SQL function planned
--   again at every call, is gone); the finish locks chain and group rows only
--   when the batch has some. readpast_count is PL/pgSQL, so its plan is kept.
-- * The finish found the chains and groups of its batch with a test that let
--   the planner read their partial indexes, which hold every task of a chain
--   or group ever run; it reads them by primary key now.

DROP INDEX readpast_tasks_state;
DROP INDEX readpast_tasks_queue;
DROP INDEX readpast_tasks_queue_state;
CREATE INDEX readpast_tasks_list ON readpast_tasks (queue, state, id) WHERE state <> 'running';

DROP INDEX readpast_attempts_queue;
DROP INDEX readpast_attempts_outcome;
CREATE INDEX readpast_attempts_list ON readpast_attempts (queue, outcome, id);

DROP FUNCTION readpast_claimed(bigint[], text, bigint);
-- Claim as in 000004, with fewer statements for the common case: one reads
-- the queue's settings and whether it has due delayed or ready grouped tasks;
-- the update that marks the taken tasks running is inline.
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
    v_due boolean;            -- delayed tasks of the queue are due
    v_grouped boolean;        -- grouped tasks of the queue are ready
BEGIN
    -- 1. Queue settings, and what the queue holds besides ungrouped ready
    -- tasks: due delayed ones, ready grouped ones (one index probe each), in
    -- one statement. Only a capped queue locks its row, so claimers of an
    -- uncapped queue never touch a shared row.
    --
    -- Each probe reads the first row of its index in that index's own order,
    -- never "does any row match" (EXISTS): the planner costs an EXISTS as the
    -- first match of a scan, and where the queue's tasks are not spread like
    -- the table's (one queue's delayed backlog, another's grouped one) it
    -- took a scan of the whole table for a few rows; no other index and no
    -- scan gives this order without reading everything first.
    SELECT q.paused, q.max_running,
           coalesce((SELECT d.available_at FROM readpast_tasks d
                      WHERE d.queue = p_queue AND d.state = 'pending' AND d.delayed
                      ORDER BY d.available_at LIMIT 1) <= now(), false),
           (SELECT t.group_name FROM readpast_tasks t
             WHERE t.queue = p_queue AND t.state = 'pending' AND NOT t.chain_wait AND NOT t.delayed
               AND t.group_name IS NOT NULL
             ORDER BY t.group_name, t.priority, t.available_at, t.id LIMIT 1) IS NOT NULL
      INTO v_paused, v_cap, v_due, v_grouped
      FROM readpast_queues q WHERE q.name = p_queue;
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
    -- skipping rows someone else holds).
    IF v_due THEN
        UPDATE readpast_tasks t SET delayed = false
         WHERE t.id IN (SELECT d.id FROM readpast_tasks d
                         WHERE d.queue = p_queue AND d.state = 'pending' AND d.delayed AND d.available_at <= now()
                         ORDER BY d.available_at LIMIT 1000 FOR UPDATE SKIP LOCKED);
        v_grouped := (SELECT t.group_name FROM readpast_tasks t
                       WHERE t.queue = p_queue AND t.state = 'pending' AND NOT t.chain_wait AND NOT t.delayed
                         AND t.group_name IS NOT NULL
                       ORDER BY t.group_name, t.priority, t.available_at, t.id LIMIT 1) IS NOT NULL;
    END IF;

    -- 3. No grouped task can run in the queue: the first v_n ready tasks,
    -- skipping rows other claimers hold, are the claim, in one statement.
    -- They are exactly the tasks it takes.
    IF NOT coalesce(v_grouped, false) THEN
        v_ids := ARRAY(SELECT t.id FROM readpast_tasks t
                        WHERE t.queue = p_queue AND t.state = 'pending' AND NOT t.chain_wait AND NOT t.delayed
                          AND t.group_name IS NULL
                        ORDER BY t.priority, t.available_at, t.id LIMIT v_n FOR UPDATE OF t SKIP LOCKED);
    ELSE
        -- The plan, from committed rows, locking nothing: the first 2 v_n + 16
        -- ungrouped ready tasks, and of every group with ready tasks in the queue
        -- and free slots by its committed counter, its first min(free, v_n) tasks
        -- and two more (the extra ones in case other claimers hold some); merged
        -- in claim order. Groups without free slots are never read past.
        WITH RECURSIVE grp AS (
            (SELECT t.group_name FROM readpast_tasks t
              WHERE t.queue = p_queue AND t.state = 'pending' AND NOT t.chain_wait AND NOT t.delayed
                AND t.group_name IS NOT NULL
              ORDER BY t.group_name, t.priority, t.available_at, t.id LIMIT 1) -- readpast_tasks_ready_grouped's order
            UNION ALL
            SELECT (SELECT t.group_name FROM readpast_tasks t
                     WHERE t.queue = p_queue AND t.state = 'pending' AND NOT t.chain_wait AND NOT t.delayed
                       AND t.group_name IS NOT NULL AND t.group_name > grp.group_name
                     ORDER BY t.group_name, t.priority, t.available_at, t.id LIMIT 1)
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
        UPDATE readpast_groups g SET running = g.running + x.k
          FROM unnest(v_groups, v_taken) AS x(name, k)
         WHERE g.name = x.name AND x.k > 0;
    END IF;
    IF cardinality(v_ids) = 0 THEN
        RETURN;
    END IF;

    -- 5. The taken tasks are running, each under a new fencing token (the
    -- attempt number in the high bits: no earlier claim of the task had it),
    -- returned in claim order. started_at is the start of this attempt: a
    -- reclaim logs the lost attempt from it.
    RETURN QUERY
    WITH claimed AS (
        UPDATE readpast_tasks t
           SET state = 'running', attempts = t.attempts + 1, lease_owner = p_owner,
               lease_token = ((t.attempts + 1)::bigint << 32) | (random() * 4294967295)::bigint,
               lease_expires_at = now() + p_lease_us * interval '1 microsecond',
               started_at = now(), cancel_requested = false, session_id = NULL
         WHERE t.id = ANY (v_ids)
        RETURNING t.*
    )
    SELECT * FROM claimed ORDER BY claimed.priority, claimed.available_at, claimed.id;
END
$$;
DROP FUNCTION readpast_new_token();

DROP FUNCTION readpast_count(text[], text[], bigint[]);
CREATE FUNCTION readpast_count(p_queues text[], p_states text[], p_n bigint[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO readpast_counts AS c (queue, state, n)
    SELECT x.q, x.s, sum(x.n) FROM unnest(p_queues, p_states, p_n) AS x(q, s, n)
     WHERE x.q IS NOT NULL GROUP BY x.q, x.s HAVING sum(x.n) <> 0 ORDER BY x.q, x.s
    ON CONFLICT (queue, state) DO UPDATE SET n = c.n + excluded.n;
END
$$;

-- End attempts as in 000005. The tasks that ended for good, and those of a
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

SELECT readpast_pin_functions();
