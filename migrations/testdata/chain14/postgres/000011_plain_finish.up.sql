-- A finish with fewer stages (docs/BENCHMARKS.md, "Claims and finishes of 2026-11-27").
--
-- 000008's finish locked the batch's tasks in one statement (FOR UPDATE, in id
-- order), read them again by primary key to decide each attempt, and updated
-- them in a third probe, through a chain of CTEs that sorted and scanned the
-- batch several times; its ANY filter over the locked ids compared every
-- attempt with every id. Measured on one backend, 500 attempts a call
-- (scripts/pg-claim-finish.sql), it cost 19.5–20.7 µs an attempt, of which
-- the update and the log row are 11.5.
--
-- Now one UPDATE decides, locks and ends each task: its SET reads the row it
-- locked (a row changed meanwhile is read again, as under FOR UPDATE), and
-- its RETURNING feeds the log row and the rollups in the same statement.
-- That is readpast_end_plain, which every finish, release and reclaim goes
-- through. A batch without chains, groups or a reclaim (the common case) goes
-- straight to it; the others first lock chains, tasks and groups in the
-- global order as before. Then the group and chain rules, and the counts of
-- tasks that ended for good in one call of readpast_count after them (once
-- per transaction, rows in key order: 000005). 15.3–16.3 µs an attempt on
-- the same measure.

-- readpast_end_state is the state an attempt leaves its task in. An
-- operator's cancel request wins: a release or a reclaim must not put the
-- task back to run again. Inlined where it is used (an SQL function).
CREATE FUNCTION readpast_end_state(p_release boolean, p_outcome text, p_cancel_requested boolean,
                                   p_attempts integer, p_retry_base integer, p_max_attempts integer)
RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN p_cancel_requested THEN 'cancelled'
        WHEN p_release THEN 'pending'
        WHEN p_outcome = 'succeeded' THEN 'succeeded'
        WHEN p_outcome = 'cancelled' THEN 'cancelled'
        WHEN p_attempts - p_retry_base < p_max_attempts THEN 'pending'
        ELSE 'failed' END
$$;

-- readpast_end_plain ends the attempts whose lease is current (p_only, when
-- not NULL: only those of these tasks) and returns one row for each, with what
-- the caller's rules and counts need; a repeat of a lease in the batch is
-- dropped before the update and gets no row, as a lease that is not current.
-- It writes the log rows and the throughput rollups. It is called only by
-- readpast_end_attempts, under that function's pinned search_path.
--
-- Lock order. Every writer of several task rows locks them in id order
-- (migration 000001, "Lock order"); the update takes its row locks in the
-- order its join reads the tasks. The attempts are sorted by id and
-- materialized, and hash and merge joins and sequential scans are off in this
-- function, so the join is a nested loop that either reads the sorted
-- attempts and probes the primary key for each (the plan it takes), or reads
-- the tasks by the primary key, the one index without a predicate: locks in
-- id order either way. On a small table with fresh statistics the planner
-- otherwise reads the table in its physical order. The state test is written
-- so that it cannot match the partial index of running tasks (on fresh
-- statistics the planner thinks that index tiny and scans all of it, while
-- under load it is mostly entries of tasks that ran already).
-- TestFinishLocksTasksInIDOrder and TestFinishFindsTasksByPrimaryKey hold
-- both. The argument needs the primary key to stay the only index of
-- readpast_tasks without a predicate: one added without would be a scan in
-- its own order that the planner may take.
CREATE FUNCTION readpast_end_plain(
    p_release boolean, p_only bigint[],
    p_ids bigint[], p_tokens bigint[], p_outcomes text[], p_errors text[],
    p_nodes text[], p_workers text[], p_sessions text[],
    p_started timestamptz[], p_finished timestamptz[], p_rows bigint[], p_messages text[])
RETURNS TABLE (out_ord bigint, out_id bigint, out_state text, out_retry_at timestamptz,
               out_queue text, out_group text, out_chain text, out_stage integer)
LANGUAGE plpgsql
SET jit = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET enable_seqscan = off
AS $$
DECLARE
    v_ord bigint[];
    v_id bigint[];
    v_state text[];
    v_retry timestamptz[];
    v_queue text[];
    v_group text[];
    v_chain text[];
    v_stage integer[];
BEGIN
    WITH a AS MATERIALIZED (
        SELECT DISTINCT ON (x.id, x.token) x.*
          FROM unnest(p_ids, p_tokens, p_outcomes, p_errors, p_nodes, p_workers, p_sessions,
                      p_started, p_finished, p_rows, p_messages)
               WITH ORDINALITY AS x(id, token, outcome, err, node, worker, sess, started, finished, nrows, msg, ord)
         WHERE p_only IS NULL OR x.id = ANY (p_only)
         ORDER BY x.id, x.token, x.ord
    ),
    ended AS (
        UPDATE readpast_tasks t
           SET state = readpast_end_state(p_release, a.outcome, t.cancel_requested, t.attempts, t.retry_base, t.max_attempts),
               available_at = CASE
                   WHEN readpast_end_state(p_release, a.outcome, t.cancel_requested, t.attempts, t.retry_base, t.max_attempts) <> 'pending'
                       THEN t.available_at
                   WHEN p_release THEN now()
                   ELSE now() + readpast_backoff(t.attempts - t.retry_base) END,
               -- A retry waits out its backoff (at least 1.5 s) as a delayed
               -- task; a released task is ready at once.
               delayed = readpast_end_state(p_release, a.outcome, t.cancel_requested, t.attempts, t.retry_base, t.max_attempts) = 'pending'
                         AND NOT p_release,
               finished_at = CASE
                   WHEN readpast_end_state(p_release, a.outcome, t.cancel_requested, t.attempts, t.retry_base, t.max_attempts) = 'pending'
                       THEN NULL ELSE now() END,
               -- A success clears the error of an earlier attempt (the log keeps it).
               last_error = CASE
                   WHEN readpast_end_state(p_release, a.outcome, t.cancel_requested, t.attempts, t.retry_base, t.max_attempts) = 'succeeded'
                       THEN NULL ELSE coalesce(nullif(a.err, ''), t.last_error) END,
               lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, cancel_requested = false
          FROM a
         WHERE t.id = a.id AND t.lease_token = a.token AND t.state || '' = 'running'
        RETURNING a.ord, t.id, t.state, CASE WHEN t.state = 'pending' THEN t.available_at END AS retry_at,
                  t.queue, t.group_name, t.chain, t.stage, t.attempts,
                  coalesce(nullif(a.sess, ''), t.session_id, '') AS sess,
                  a.node, a.worker, a.started, a.finished, a.outcome, a.err, a.nrows, a.msg
    ),
    rolled AS (
        -- The throughput rollups: attempts per minute and per hour, queue and
        -- outcome, with the time they ran; rows locked in key order.
        INSERT INTO readpast_throughput AS tp (span, bucket, queue, outcome, n, busy_ms)
        SELECT sp.span, date_trunc(sp.span, coalesce(e.finished, now())), e.queue, e.outcome, count(*),
               sum(greatest(0, (extract(epoch FROM coalesce(e.finished, now()) - coalesce(e.started, e.finished, now())) * 1000)::bigint))
          FROM ended e CROSS JOIN (VALUES ('minute'), ('hour')) AS sp(span)
         GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
        ON CONFLICT (span, bucket, queue, outcome) DO UPDATE SET n = tp.n + excluded.n, busy_ms = tp.busy_ms + excluded.busy_ms
    ),
    logged AS (
        INSERT INTO readpast_attempts (task_id, attempt, queue, node, worker, session_id, started_at, finished_at,
                                       duration_ms, outcome, error, rows_affected, messages)
        SELECT e.id, e.attempts, e.queue, coalesce(e.node, ''), coalesce(e.worker, ''), e.sess, ts.s, ts.f,
               greatest(0, (extract(epoch FROM ts.f - ts.s) * 1000)::bigint), e.outcome,
               coalesce(e.err, ''), coalesce(e.nrows, 0), coalesce(e.msg, '')
          FROM ended e
               CROSS JOIN LATERAL (SELECT coalesce(e.started, e.finished, now()) AS s,
                                          coalesce(e.finished, now()) AS f) ts
         ORDER BY e.ord
    )
    SELECT array_agg(e.ord), array_agg(e.id), array_agg(e.state), array_agg(e.retry_at),
           array_agg(e.queue), array_agg(e.group_name), array_agg(e.chain), array_agg(e.stage)
      INTO v_ord, v_id, v_state, v_retry, v_queue, v_group, v_chain, v_stage
      FROM ended e;
    RETURN QUERY SELECT * FROM unnest(v_ord, v_id, v_state, v_retry, v_queue, v_group, v_chain, v_stage);
END
$$;

-- End attempts: chains, tasks and groups locked in the global order when the
-- batch has chains or groups or is a reclaim (readpast_end_plain locks a plain
-- batch's tasks itself), then readpast_end_plain, the group and chain rules,
-- and the counts. One result per attempt given, in order; a NULL state marks a
-- lease that was not current.
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
    v_chains text[];      -- the chains of the batch, none: NULL
    v_any_group boolean;  -- whether a task of the batch has a group
    v_held bigint[];      -- the tasks locked first (a reclaim's: expired, and not held by anyone else)
    v_ord bigint[];       -- readpast_end_plain's rows
    v_id bigint[];
    v_state text[];
    v_retry timestamptz[];
    v_queue text[];
    v_group text[];
    v_chain text[];
    v_stage integer[];
    v_cq text[];          -- count changes: queue, state (one each)
    v_cs text[];
    v_chain_name text;
    r record;
BEGIN
    -- A task's chain and group never change, so they are read first, by
    -- primary key (a test on chain or group_name would let the planner read
    -- their partial indexes, which hold every task of a chain or group ever
    -- run).
    SELECT array_agg(DISTINCT x.chain) FILTER (WHERE x.chain IS NOT NULL), coalesce(bool_or(x.group_name IS NOT NULL), false)
      INTO v_chains, v_any_group
      FROM readpast_tasks x WHERE x.id = ANY (p_ids);

    -- Locks in the global order: chains, tasks, groups; the statements that
    -- lock chains and groups run only when the batch has some. A reclaim
    -- skips tasks someone holds and leases renewed meanwhile; the tasks are
    -- found by primary key (see readpast_end_plain).
    IF v_chains IS NOT NULL OR v_any_group OR p_reclaim THEN
        IF v_chains IS NOT NULL THEN
            PERFORM 1 FROM readpast_chains WHERE name = ANY (v_chains) ORDER BY name FOR UPDATE;
        END IF;
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
    END IF;

    SELECT array_agg(e.out_ord), array_agg(e.out_id), array_agg(e.out_state), array_agg(e.out_retry_at),
           array_agg(e.out_queue), array_agg(e.out_group), array_agg(e.out_chain), array_agg(e.out_stage)
      INTO v_ord, v_id, v_state, v_retry, v_queue, v_group, v_chain, v_stage
      FROM readpast_end_plain(p_release, CASE WHEN p_reclaim THEN v_held END, p_ids, p_tokens, p_outcomes, p_errors,
                              p_nodes, p_workers, p_sessions, p_started, p_finished, p_rows, p_messages) e;

    -- Every ended attempt gives its group's slot back.
    IF v_any_group THEN
        UPDATE readpast_groups g SET running = greatest(g.running - x.k, 0)
          FROM (SELECT gn, count(*) AS k FROM unnest(v_group) AS gn WHERE gn IS NOT NULL GROUP BY gn) x
         WHERE g.name = x.gn;
    END IF;

    -- The tasks that ended for good are counted; then the chains: the failure
    -- policy for each task of a chain that ended failed or cancelled, in chain
    -- and id order (the tasks it cancels are counted too), all in one call of
    -- readpast_count; then each chain's next stage is opened. The chain rows
    -- are held.
    SELECT coalesce(array_agg(x.q), '{}'), coalesce(array_agg(x.s), '{}') INTO v_cq, v_cs
      FROM unnest(v_queue, v_state) AS x(q, s) WHERE x.s IN ('succeeded', 'failed', 'cancelled');
    IF v_chains IS NOT NULL THEN
        FOR r IN SELECT * FROM unnest(v_chain, v_id, v_stage, v_state) AS x(chain, id, stage, state)
                  WHERE x.chain IS NOT NULL AND x.state IN ('failed', 'cancelled') ORDER BY x.chain, x.id LOOP
            v_cq := v_cq || ARRAY(SELECT readpast_chain_failed(r.chain, r.id, r.stage, r.state));
        END LOOP;
        v_cs := v_cs || array_fill('cancelled'::text, ARRAY[cardinality(v_cq) - cardinality(v_cs)]);
    END IF;
    IF cardinality(v_cq) > 0 THEN
        PERFORM readpast_count(v_cq, v_cs, array_fill(1::bigint, ARRAY[cardinality(v_cq)]));
    END IF;
    IF v_chains IS NOT NULL THEN
        FOR v_chain_name IN SELECT DISTINCT c FROM unnest(v_chain) AS c WHERE c IS NOT NULL ORDER BY c LOOP
            PERFORM readpast_refresh_chain(v_chain_name);
        END LOOP;
    END IF;

    RETURN QUERY
    SELECT i.id, d.state, d.retry_at
      FROM unnest(p_ids) WITH ORDINALITY AS i(id, ord)
      LEFT JOIN unnest(v_ord, v_state, v_retry) AS d(ord, state, retry_at) ON d.ord = i.ord
     ORDER BY i.ord;
END
$$;

SELECT readpast_pin_functions();
