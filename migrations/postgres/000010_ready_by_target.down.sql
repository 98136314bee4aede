-- Back to migration 000008: the ready indexes of migration 000001 (the target
-- a residual predicate), readpast_group_admits and readpast_claim as
-- migration 000004 made them.
CREATE INDEX readpast_tasks_ready ON readpast_tasks (queue, priority, available_at, id)
    WHERE state = 'pending' AND NOT chain_wait AND NOT delayed AND group_name IS NULL;
CREATE INDEX readpast_tasks_ready_grouped ON readpast_tasks (queue, group_name, priority, available_at, id)
    WHERE state = 'pending' AND NOT chain_wait AND NOT delayed AND group_name IS NOT NULL;
DROP INDEX readpast_tasks_ready_target;
DROP INDEX readpast_tasks_ready_grouped_target;

DROP FUNCTION readpast_claim(text, text, integer, bigint, text[]);
DROP FUNCTION readpast_group_admits(text, text[]);
DROP FUNCTION readpast_ready_targets(text);

CREATE FUNCTION readpast_group_admits(p_queue text) RETURNS boolean
LANGUAGE plpgsql STABLE
SET jit = off
AS $$
BEGIN
    RETURN EXISTS (
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
        )
        SELECT 1 FROM grp JOIN readpast_groups g ON g.name = grp.group_name
         WHERE g.running < g.max_running);
END
$$;

CREATE FUNCTION readpast_claim(p_queue text, p_owner text, p_limit integer, p_lease_us bigint, p_targets text[])
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
    v_grouped boolean;        -- a group of the queue's ready tasks has a free slot
BEGIN
    -- 1. Queue settings, and what the queue holds besides ungrouped ready
    -- tasks: due delayed ones (one index probe), ready grouped ones that a
    -- group with a free slot would admit (readpast_group_admits), in one
    -- statement. Only a capped queue locks its row, so claimers of an
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
           readpast_group_admits(p_queue)
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
        v_grouped := readpast_group_admits(p_queue);
    END IF;

    -- 3. No grouped task can run in the queue (none is ready, or every group
    -- with ready tasks is full by its committed counter, as the plan below
    -- would find it): the first v_n ready ungrouped tasks,
    -- skipping rows other claimers hold, are the claim, in one statement.
    -- They are exactly the tasks it takes.
    IF NOT coalesce(v_grouped, false) THEN
        v_ids := ARRAY(SELECT t.id FROM readpast_tasks t
                        WHERE t.queue = p_queue AND t.state = 'pending' AND NOT t.chain_wait AND NOT t.delayed
                          AND t.group_name IS NULL
                          AND (p_targets IS NULL OR t.target = ANY (p_targets))
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
                AND t.group_name IS NULL AND (p_targets IS NULL OR t.target = ANY (p_targets))
              ORDER BY t.priority, t.available_at, t.id LIMIT 2 * v_n + 16)
            UNION ALL
            SELECT c.id, c.priority, c.available_at, o.name, o.free
              FROM open_groups o CROSS JOIN LATERAL (
                   SELECT t.id, t.priority, t.available_at FROM readpast_tasks t
                    WHERE t.queue = p_queue AND t.group_name = o.name AND t.state = 'pending'
                      AND NOT t.chain_wait AND NOT t.delayed
                      AND (p_targets IS NULL OR t.target = ANY (p_targets))
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

SELECT readpast_pin_functions();
