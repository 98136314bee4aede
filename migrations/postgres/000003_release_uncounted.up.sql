-- A release of attempts a fault stopped gives them back to their tasks'
-- budgets in the same statement (docs/WORKERS.md, "A lost session is not the
-- body's failure"; docs/RELIABILITY.md, "A stalled node").
--
-- The give-back (retry_base + 1, so max_attempts counts the body's own tries)
-- first ran as a second statement after readpast_end_attempts, in a
-- transaction the node held across two round trips: a node frozen between
-- them would have held the throughput rows the release had just written,
-- which every finish of the queue takes. One call of this function is one
-- statement that never waits for the node.
--
-- Lock order: readpast_end_attempts locks its tasks, groups and rollup rows
-- in the global order; the give-back then updates only task rows it locked
-- already, so it takes no lock of its own.
CREATE FUNCTION readpast_release_uncounted(
    p_uncounted boolean[],
    p_ids bigint[], p_tokens bigint[], p_outcomes text[], p_errors text[],
    p_nodes text[], p_workers text[], p_sessions text[],
    p_started timestamptz[], p_finished timestamptz[], p_rows bigint[], p_messages text[])
RETURNS TABLE (out_ord bigint, out_state text, out_retry_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    v_given bigint[] := '{}';
    r record;
BEGIN
    FOR r IN SELECT * FROM readpast_end_attempts(true, false, p_ids, p_tokens, p_outcomes, p_errors,
                                                 p_nodes, p_workers, p_sessions, p_started, p_finished,
                                                 p_rows, p_messages) LOOP
        IF p_uncounted[r.out_ord] AND r.out_state = 'pending' THEN
            v_given := v_given || p_ids[r.out_ord];
        END IF;
        out_ord := r.out_ord;
        out_state := r.out_state;
        out_retry_at := r.out_retry_at;
        RETURN NEXT;
    END LOOP;
    UPDATE readpast_tasks SET retry_base = retry_base + 1 WHERE id = ANY (v_given);
END
$$;

-- readpast_pin_functions as in migration 000002, with readpast_release_uncounted
-- among the entry points it pins.
CREATE OR REPLACE FUNCTION readpast_pin_functions() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
              WHERE p.pronamespace = current_schema()::regnamespace
                AND p.proname IN ('readpast_claim', 'readpast_enqueue', 'readpast_end_attempts',
                                  'readpast_cancel', 'readpast_retry', 'readpast_mark_committed',
                                  'readpast_release_uncounted') LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f, current_schema());
    END LOOP;
END
$$;

SELECT readpast_pin_functions();
