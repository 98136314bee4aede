-- Back to migration 000013: readpast_retry as the baseline made it.
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
