-- Restores version 5's enqueue and drops the unique keys.
DROP FUNCTION readpast_enqueue(text[], text[], integer[], timestamptz[], bigint[], text[], text[], integer[], integer[], bigint[], boolean[], boolean[], text[], text[]);
CREATE FUNCTION readpast_enqueue(
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

DROP INDEX readpast_tasks_unique;
ALTER TABLE readpast_tasks DROP COLUMN unique_key;

SELECT readpast_pin_functions();
