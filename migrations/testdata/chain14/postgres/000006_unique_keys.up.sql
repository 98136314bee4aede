-- Unique keys on enqueue (docs/QUEUE.md, "Unique keys"): while an unfinished
-- task of a queue has a key, enqueueing another task with the same key in that
-- queue returns the existing task and writes nothing.
--
-- readpast_tasks_unique is a partial UNIQUE index over unfinished keyed tasks.
-- It cannot make claimers wait on each other (the seed's filtered-unique-index
-- trap): a claim moves a task from pending to running, both inside the index's
-- predicate, with the same key, so the only row its uniqueness check meets is
-- the task itself; an enqueuer of the same key may wait for a claimer's commit,
-- a claimer never for anyone (queuetest's nonblocking group runs with keys).

ALTER TABLE readpast_tasks ADD COLUMN unique_key text;
CREATE UNIQUE INDEX readpast_tasks_unique ON readpast_tasks (queue, unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('pending', 'running');

DROP FUNCTION readpast_enqueue(text[], text[], integer[], timestamptz[], bigint[], text[], text[], integer[], integer[], bigint[], boolean[], boolean[], text[]);
CREATE FUNCTION readpast_enqueue(
    p_queue text[], p_body text[], p_priority integer[], p_available_at timestamptz[], p_delay_us bigint[],
    p_group text[], p_chain text[], p_stage integer[], p_max_attempts integer[], p_timeout_ms bigint[],
    p_transactional boolean[], p_continue boolean[], p_created_by text[], p_unique_key text[])
RETURNS TABLE (out_id bigint, out_duplicate boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_name text;
    v_id bigint;
    v_at timestamptz;
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

    IF NOT EXISTS (SELECT 1 FROM unnest(p_unique_key) AS k WHERE k <> '') THEN
        -- Identity values are drawn in the order rows leave the sorted SELECT, so
        -- the ascending ids are the input order.
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
        SELECT ins.id, false FROM ins ORDER BY ins.id;
    ELSE
        -- With unique keys, one row at a time in input order. A keyed task
        -- whose key an unfinished task of its queue holds is that task: the
        -- partial unique index readpast_tasks_unique arbitrates, and a
        -- concurrent enqueuer of the same key waits for this one's commit,
        -- then sees its task (each statement reads a fresh snapshot). If the
        -- holder finished between the insert and the look-up, insert again.
        FOR i IN 1 .. cardinality(p_queue) LOOP
            v_at := coalesce(p_available_at[i], now() + p_delay_us[i] * interval '1 microsecond');
            LOOP
                INSERT INTO readpast_tasks (queue, body, priority, available_at, delayed, group_name, chain, stage, chain_wait,
                                            continue_on_failure, max_attempts, timeout_ms, transactional, created_by, unique_key)
                VALUES (p_queue[i], p_body[i], p_priority[i], v_at, v_at > now(), nullif(p_group[i], ''),
                        nullif(p_chain[i], ''), p_stage[i], p_chain[i] <> '', p_continue[i], p_max_attempts[i],
                        p_timeout_ms[i], p_transactional[i], p_created_by[i], nullif(p_unique_key[i], ''))
                ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL AND state IN ('pending', 'running') DO NOTHING
                RETURNING id INTO v_id;
                IF FOUND THEN
                    out_id := v_id;
                    out_duplicate := false;
                    EXIT;
                END IF;
                SELECT t.id INTO v_id FROM readpast_tasks t
                 WHERE t.queue = p_queue[i] AND t.unique_key = p_unique_key[i] AND t.state IN ('pending', 'running');
                IF FOUND THEN
                    out_id := v_id;
                    out_duplicate := true;
                    EXIT;
                END IF;
            END LOOP;
            RETURN NEXT;
        END LOOP;
    END IF;

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

SELECT readpast_pin_functions();
