CREATE TABLE readpast_queues (
    name        text PRIMARY KEY,
    workers     integer,                    -- per node; NULL: the node's default
    max_running integer,                    -- cluster-wide; NULL: no limit
    paused      boolean NOT NULL DEFAULT false,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    updated_by  text NOT NULL DEFAULT ''
);

CREATE TABLE readpast_groups (
    name        text PRIMARY KEY,
    max_running integer NOT NULL DEFAULT 1,
    running     integer NOT NULL DEFAULT 0, -- kept in step with task state changes
    updated_at  timestamptz NOT NULL DEFAULT now(),
    updated_by  text NOT NULL DEFAULT ''
);

CREATE TABLE readpast_chains (
    name                text PRIMARY KEY,
    continue_on_failure boolean NOT NULL DEFAULT false,
    created_at          timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE readpast_tasks (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue               text NOT NULL,
    body                text NOT NULL,
    priority            smallint NOT NULL DEFAULT 100,
    available_at        timestamptz NOT NULL DEFAULT now(),
    group_name          text,
    chain               text,
    stage               integer NOT NULL DEFAULT 0,
    chain_wait          boolean NOT NULL DEFAULT false, -- an earlier stage of its chain is unfinished
    chain_cancelled     boolean NOT NULL DEFAULT false, -- cancelled by the chain failure policy
    continue_on_failure boolean NOT NULL DEFAULT false,
    max_attempts        integer NOT NULL DEFAULT 3,
    retry_base          integer NOT NULL DEFAULT 0,     -- attempts made before the last manual retry
    timeout_ms          bigint NOT NULL DEFAULT 0,
    transactional       boolean NOT NULL DEFAULT false,
    state               text NOT NULL DEFAULT 'pending'
                        CHECK (state IN ('pending','running','succeeded','failed','cancelled')),
    attempts            integer NOT NULL DEFAULT 0,
    lease_owner         text,
    lease_token         bigint,
    lease_expires_at    timestamptz,
    session_id          text,
    cancel_requested    boolean NOT NULL DEFAULT false,
    created_at          timestamptz NOT NULL DEFAULT now(),
    created_by          text NOT NULL DEFAULT '',
    started_at          timestamptz,
    finished_at         timestamptz,
    finished_by         text,
    last_error          text
);

-- The claim path: only claimable-by-chain pending rows, in claim order.
CREATE INDEX readpast_tasks_claim ON readpast_tasks (queue, priority, available_at, id)
    WHERE state = 'pending' AND NOT chain_wait;
-- Running rows: lease reclaim and per-queue running counts.
CREATE INDEX readpast_tasks_running ON readpast_tasks (lease_expires_at)
    WHERE state = 'running';
-- Dashboard lists (newest first) by state, queue, or both.
CREATE INDEX readpast_tasks_state ON readpast_tasks (state, id);
CREATE INDEX readpast_tasks_queue ON readpast_tasks (queue, id);
CREATE INDEX readpast_tasks_queue_state ON readpast_tasks (queue, state, id);
CREATE INDEX readpast_tasks_group ON readpast_tasks (group_name, id) WHERE group_name IS NOT NULL;
CREATE INDEX readpast_tasks_chain ON readpast_tasks (chain, stage, id) WHERE chain IS NOT NULL;

-- The execution log: one row per attempt (SPEC §6).
CREATE TABLE readpast_attempts (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id       bigint NOT NULL,
    attempt       integer NOT NULL,
    queue         text NOT NULL,
    node          text NOT NULL DEFAULT '',
    worker        text NOT NULL DEFAULT '',
    session_id    text NOT NULL DEFAULT '',
    started_at    timestamptz NOT NULL,
    finished_at   timestamptz NOT NULL,
    duration_ms   bigint NOT NULL,
    outcome       text NOT NULL
                  CHECK (outcome IN ('succeeded','failed','timed_out','cancelled','lost')),
    error         text NOT NULL DEFAULT '',
    rows_affected bigint NOT NULL DEFAULT 0,
    messages      text NOT NULL DEFAULT ''
);
CREATE INDEX readpast_attempts_task ON readpast_attempts (task_id, attempt);
CREATE INDEX readpast_attempts_queue ON readpast_attempts (queue, id);
CREATE INDEX readpast_attempts_outcome ON readpast_attempts (outcome, id);
CREATE INDEX readpast_attempts_finished ON readpast_attempts (finished_at);

CREATE TABLE readpast_nodes (
    id           text PRIMARY KEY,
    hostname     text NOT NULL DEFAULT '',
    pid          integer NOT NULL DEFAULT 0,
    version      text NOT NULL DEFAULT '',
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    stopped_at   timestamptz,
    info         text NOT NULL DEFAULT '{}' -- JSON: workers and what each runs
);

-- Who changed what (SPEC §7: every mutation records who did it).
CREATE TABLE readpast_audit (
    id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at     timestamptz NOT NULL DEFAULT now(),
    actor  text NOT NULL,
    action text NOT NULL,
    target text NOT NULL,
    detail text NOT NULL DEFAULT ''
);
CREATE INDEX readpast_audit_at ON readpast_audit (at);

-- ---------------------------------------------------------------------------
-- The state machine as server-side functions, so that a claim, an enqueue or a
-- batch of finishes is one round trip and one short transaction.
--
-- Lock order. Every function that waits for a row lock takes locks in this order,
-- each kind sorted by key, so two transactions never wait on each other in a
-- cycle:  queue row (capped claims only) -> chain rows -> task rows -> group rows.
-- * Claimers never wait for task or group rows (SKIP LOCKED), only for a capped
--   queue's row, before they hold anything else; so a claimer holding rows is
--   never waiting, and whoever waits for its rows waits at most one claim.
-- * Apart from claims, pending rows of a chain are changed only by the holder of
--   the chain row (refresh, failure policy, cancel, retry).
-- * Enqueue creates missing queue and group rows before it locks its chains:
--   INSERT .. ON CONFLICT DO NOTHING locks no existing row and waits only for
--   another transaction inserting the same new name, which holds nothing that
--   anyone else waits for.
-- ---------------------------------------------------------------------------

-- A fencing token: 63 random bits from the server's strong random source
-- (gen_random_uuid), never 0.
CREATE FUNCTION readpast_new_token() RETURNS bigint
LANGUAGE sql VOLATILE AS $$
    SELECT greatest(1, ('x' || substr(md5(gen_random_uuid()::text), 1, 16))::bit(64)::bigint
                       & 9223372036854775807)
$$;

-- The back-off before retry n, as queue.Backoff: 2^n s capped at 1 h, +-25 % jitter.
CREATE FUNCTION readpast_backoff(p_n integer) RETURNS interval
LANGUAGE sql VOLATILE AS $$
    SELECT make_interval(secs => least(2 ^ least(greatest(p_n, 1), 12), 3600) * (0.75 + random() * 0.5))
$$;

-- Recomputes chain_wait for the chain's pending tasks: only the lowest unfinished
-- stage may run. The chain row lock waits, so two finishers of one stage
-- serialise here and the second sees the first's commit (each statement of a
-- volatile function reads a fresh snapshot, taken after the lock).
CREATE FUNCTION readpast_refresh_chain(p_chain text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_min integer;
BEGIN
    PERFORM 1 FROM readpast_chains WHERE name = p_chain FOR UPDATE;
    SELECT min(stage) INTO v_min FROM readpast_tasks
     WHERE chain = p_chain AND state IN ('pending', 'running');
    -- Only rows whose flag changes are written: fewer row versions, fewer locks.
    UPDATE readpast_tasks SET chain_wait = (stage > v_min)
     WHERE chain = p_chain AND state = 'pending' AND chain_wait <> (stage > v_min);
END
$$;

-- The chain failure policy: a task of the chain ended failed or cancelled, so the
-- later stages are cancelled, unless the chain continues on failure. The caller
-- holds the chain row.
CREATE FUNCTION readpast_chain_failed(p_chain text, p_task_id bigint, p_stage integer, p_state text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce((SELECT continue_on_failure FROM readpast_chains WHERE name = p_chain), false) THEN
        RETURN;
    END IF;
    -- The text is queue.ChainCancelledError.
    UPDATE readpast_tasks
       SET state = 'cancelled', chain_cancelled = true, chain_wait = false, finished_at = now(),
           last_error = format('chain %s: task %s at stage %s ended %s', p_chain, p_task_id, p_stage, p_state)
     WHERE chain = p_chain AND state = 'pending' AND stage > p_stage;
END
$$;

-- Enqueue: one call writes a batch (parallel arrays, one element per task) and
-- returns the new ids in the order given. Missing queue, group and chain rows are
-- created with default settings.
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
        INSERT INTO readpast_tasks (queue, body, priority, available_at, group_name, chain, stage, chain_wait,
                                    continue_on_failure, max_attempts, timeout_ms, transactional, created_by)
        SELECT x.q, x.b, x.p, coalesce(x.at, now() + x.d * interval '1 microsecond'), nullif(x.g, ''),
               nullif(x.c, ''), x.s, x.c <> '', x.k, x.m, x.tm, x.tr, x.cb
          FROM unnest(p_queue, p_body, p_priority, p_available_at, p_delay_us, p_group, p_chain, p_stage,
                      p_max_attempts, p_timeout_ms, p_transactional, p_continue, p_created_by)
               WITH ORDINALITY AS x(q, b, p, at, d, g, c, s, m, tm, tr, k, cb, ord)
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

-- Claim (docs/QUEUE.md, "Claiming"): leases up to p_limit claimable tasks of the
-- queue to p_owner and returns them running, in claim order.
CREATE FUNCTION readpast_claim(p_queue text, p_owner text, p_limit integer, p_lease_us bigint)
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

-- Ends attempts (Finish, Release, ReclaimExpired): one execution-log row each and
-- the task's next state, as queue.AfterAttempt decides. Parallel arrays, one
-- element per attempt; a row with a NULL state means that lease was not current
-- and nothing changed. p_reclaim takes only leases that have expired and skips
-- tasks whose holder is finishing them right now.
CREATE FUNCTION readpast_end_attempts(
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

-- Cancel: a pending task is cancelled at once (with the chain failure policy), a
-- running one gets cancel_requested for its holder to act on. out_changed is
-- false when the task is finished already; out_found false when it does not exist.
CREATE FUNCTION readpast_cancel(p_id bigint, p_actor text,
                                OUT out_found boolean, OUT out_changed boolean, OUT out_state text)
LANGUAGE plpgsql AS $$
DECLARE
    v_chain text;
    t readpast_tasks;
BEGIN
    out_changed := false;
    -- The chain (immutable per task) is read first, so its row is locked before
    -- the task's, in the global order.
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
    IF t.state = 'running' THEN
        UPDATE readpast_tasks SET cancel_requested = true, finished_by = p_actor WHERE id = p_id;
    ELSIF t.state = 'pending' THEN
        UPDATE readpast_tasks
           SET state = 'cancelled', finished_at = now(), finished_by = p_actor, chain_wait = false,
               last_error = 'cancelled by ' || p_actor
         WHERE id = p_id;
        out_state := 'cancelled';
        IF v_chain IS NOT NULL THEN
            PERFORM readpast_chain_failed(v_chain, p_id, t.stage, 'cancelled');
            PERFORM readpast_refresh_chain(v_chain);
        END IF;
    ELSE
        RETURN;
    END IF;
    out_changed := true;
    INSERT INTO readpast_audit (actor, action, target, detail) VALUES (p_actor, 'cancel', 'task ' || p_id, out_state);
END
$$;

-- Retry: a failed or cancelled task is pending now with a fresh attempt budget;
-- the later stages its chain cancelled because of it are reopened. out_state is
-- the state before; out_changed false when it could not be retried.
CREATE FUNCTION readpast_retry(p_id bigint, p_actor text,
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
       SET state = 'pending', available_at = now(), retry_base = attempts, finished_at = NULL,
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
