-- ReadPast's schema on PostgreSQL, whole (docs/QUEUE.md describes the model).
-- It replaces the pre-release chain of migrations 1-14; a schema made by that
-- chain is refused by migrate with what to do (migrations/legacy.go).
--
-- Every object is created in the current schema (the DSN's search_path); the
-- store's entry points are pinned to it at the end (readpast_pin_functions).
--
-- The cost rule of SPEC §9: nothing a claim, a finish or a page reads may grow
-- with history. Each index below says which read it serves; the indexes over
-- unfinished tasks are partial, so history never enters them.

-- Queue settings, shared by every node (SPEC §5).
CREATE TABLE readpast_queues (
    name        text PRIMARY KEY,
    workers     integer,                    -- per node; NULL: the node's default
    max_running integer,                    -- cluster-wide; NULL: no limit
    paused      boolean NOT NULL DEFAULT false,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    updated_by  text NOT NULL DEFAULT ''
);

-- Concurrency groups: at most max_running of a group's tasks run at once.
CREATE TABLE readpast_groups (
    name        text PRIMARY KEY,
    max_running integer NOT NULL DEFAULT 1,
    running     integer NOT NULL DEFAULT 0, -- kept in step with task state changes
    updated_at  timestamptz NOT NULL DEFAULT now(),
    updated_by  text NOT NULL DEFAULT ''
);

-- Chains: ordered stages; the failure policy is the chain's.
CREATE TABLE readpast_chains (
    name                text PRIMARY KEY,
    continue_on_failure boolean NOT NULL DEFAULT false,
    created_at          timestamptz NOT NULL DEFAULT now()
);

-- The tasks (SPEC §3). The last four columns came after the others in the
-- pre-release chain and stay last, so a schema made by either has the same
-- column order (readpast_claim returns the row type).
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
    last_error          text,
    delayed             boolean NOT NULL DEFAULT false, -- pending with available_at ahead
    unique_key          text,
    schedule_name       text,                           -- the schedule that made it
    fire_at             timestamptz                     -- and the fire time it is the run of
);

-- The claim stays flat behind any backlog (docs/QUEUE.md, "Claiming behind a
-- backlog"):
-- * delayed: a pending task whose available_at is still ahead is kept out of
--   the claim's indexes until it is due; the claim promotes the due ones of its
--   queue first, so 1M tasks delayed at a more urgent priority are never read.
-- * Ungrouped ready tasks in claim order, and grouped ready tasks by group,
--   then claim order. A claim reads the groups that have ready tasks in its
--   queue (a skip scan: one index probe per group), keeps the groups with free
--   slots by their committed counters, and reads only those groups' first
--   tasks, so 1M pending tasks of a full group are never read either.
CREATE INDEX readpast_tasks_ready ON readpast_tasks (queue, priority, available_at, id)
    WHERE state = 'pending' AND NOT chain_wait AND NOT delayed AND group_name IS NULL;
CREATE INDEX readpast_tasks_ready_grouped ON readpast_tasks (queue, group_name, priority, available_at, id)
    WHERE state = 'pending' AND NOT chain_wait AND NOT delayed AND group_name IS NOT NULL;
CREATE INDEX readpast_tasks_delayed ON readpast_tasks (queue, available_at)
    WHERE state = 'pending' AND delayed;
-- Running rows: lease reclaim and per-queue running counts.
CREATE INDEX readpast_tasks_running ON readpast_tasks (lease_expires_at)
    WHERE state = 'running';
-- Purges of finished tasks read by finished_at.
CREATE INDEX readpast_tasks_finished ON readpast_tasks (finished_at)
    WHERE state IN ('succeeded', 'failed', 'cancelled');
-- The dashboard's lists, newest first. Every update of a task writes an entry
-- into each index whose predicate the new row matches (no HOT update: the
-- state is in the partial indexes' predicates), so the lists share one index
-- that leaves running tasks out: a claim writes 2 entries (the primary key and
-- readpast_tasks_running), a finish 3. Running tasks, never more than the
-- workers, are listed by readpast_tasks_running; a list of one state over all
-- queues reads this index per queue (internal/queue/postgres/read.go).
CREATE INDEX readpast_tasks_list ON readpast_tasks (queue, state, id) WHERE state <> 'running';
-- A group's or a schedule's tasks of one state are one range in id order: a
-- page of one state reads its range, a page of every state merges the newest
-- rows of one range per state (postgres/read.go, split), so neither reads the
-- history of other states (a schedule that fires every minute makes 43,000
-- tasks a month).
CREATE INDEX readpast_tasks_group_state ON readpast_tasks (group_name, state, id) WHERE group_name IS NOT NULL;
CREATE INDEX readpast_tasks_schedule_state ON readpast_tasks (schedule_name, state, id) WHERE schedule_name IS NOT NULL;
-- Chain order: a chain's unfinished earlier stages (readpast_refresh_chain).
CREATE INDEX readpast_tasks_chain ON readpast_tasks (chain, stage, id) WHERE chain IS NOT NULL;
-- Unique keys on enqueue (docs/QUEUE.md, "Unique keys"): while an unfinished
-- task of a queue has a key, enqueueing another task with the same key in that
-- queue returns the existing task and writes nothing. This partial UNIQUE index
-- cannot make claimers wait on each other (the seed's filtered-unique-index
-- trap): a claim moves a task from pending to running, both inside the
-- predicate, with the same key, so the only row its uniqueness check meets is
-- the task itself; an enqueuer of the same key may wait for a claimer's
-- commit, a claimer never for anyone (queuetest's nonblocking group runs with
-- keys).
CREATE UNIQUE INDEX readpast_tasks_unique ON readpast_tasks (queue, unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('pending', 'running');

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
-- A task's attempts.
CREATE INDEX readpast_attempts_task ON readpast_attempts (task_id, attempt);
-- Retention and time ranges.
CREATE INDEX readpast_attempts_finished ON readpast_attempts (finished_at);
-- Pages by queue and outcome: each queue's attempts of each outcome are one
-- range in id order; a page of one queue, or of one outcome over every queue,
-- merges one range per outcome or per queue. One index instead of (queue, id)
-- and (outcome, id): four entries per attempt instead of five.
CREATE INDEX readpast_attempts_list ON readpast_attempts (queue, outcome, id);

-- Nodes register and heartbeat (SPEC §5); retention deletes the long gone.
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

-- Costs that do not grow with history (docs/QUEUE.md, "Counts and the
-- throughput series"): the dashboard, the API and /metrics read finished
-- counts and the throughput chart from small rollups kept by the transactions
-- that change them, instead of a GROUP BY over all retained history.
-- Unfinished counts come from the tasks' partial indexes.
-- * readpast_counts: finished tasks per queue and final state. Changed, in the
--   same transaction, by every change into or out of a final state (end of an
--   attempt, the chain failure policy, cancel, retry, purge), always once per
--   transaction with its rows in key order, so two transactions never wait
--   for each other's rows in a cycle.
-- * readpast_throughput: attempts per minute and per hour, queue and outcome,
--   with the time they ran; written with the log rows. Minute rows are kept
--   48 hours, hour rows 8 days (Store.PurgeRollups).
CREATE TABLE readpast_counts (
    queue text NOT NULL,
    state text NOT NULL CHECK (state IN ('succeeded', 'failed', 'cancelled')),
    n     bigint NOT NULL,
    PRIMARY KEY (queue, state)
);
CREATE TABLE readpast_throughput (
    span    text NOT NULL CHECK (span IN ('minute', 'hour')),
    bucket  timestamptz NOT NULL,
    queue   text NOT NULL,
    outcome text NOT NULL,
    n       bigint NOT NULL,
    busy_ms bigint NOT NULL,
    PRIMARY KEY (span, bucket, queue, outcome)
);

-- Schedules (docs/SCHEDULES.md): a cron expression in a time zone and the
-- template of the task each fire creates.
--
-- Exactly once without a leader: a fire is one transaction that moves the
-- schedule's row from the version its scheduler read to the next one and
-- creates the task; a second scheduler with the same plan skips the row while
-- the first holds it (SKIP LOCKED) and finds the version gone after. The row
-- keeps only the latest fire and run, so nothing here grows with history.
CREATE TABLE readpast_schedules (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name              text NOT NULL UNIQUE,
    cron              text NOT NULL,
    time_zone         text NOT NULL DEFAULT 'UTC',
    queue             text NOT NULL,
    body              text NOT NULL,
    priority          smallint NOT NULL DEFAULT 100,
    group_name        text,
    max_attempts      integer NOT NULL DEFAULT 3,
    timeout_ms        bigint NOT NULL DEFAULT 0,
    transactional     boolean NOT NULL DEFAULT false,
    paused            boolean NOT NULL DEFAULT false,
    overlap           text NOT NULL DEFAULT 'skip' CHECK (overlap IN ('skip','allow')),
    misfire           text NOT NULL DEFAULT 'run_once' CHECK (misfire IN ('run_once','skip')),
    version           bigint NOT NULL DEFAULT 1,     -- changes with every change and every fire
    next_fire_at      timestamptz,                   -- NULL while paused
    last_fire_at      timestamptz,                   -- the latest fire time handled
    last_fire_outcome text CHECK (last_fire_outcome IN ('enqueued','skipped_overlap','skipped_misfire')),
    last_fire_missed  integer NOT NULL DEFAULT 0,    -- earlier fire times it stood for or skipped
    last_task_id      bigint,                        -- the latest run (a fire or a run now)
    created_at        timestamptz NOT NULL DEFAULT now(),
    created_by        text NOT NULL DEFAULT '',
    updated_at        timestamptz NOT NULL DEFAULT now(),
    updated_by        text NOT NULL DEFAULT ''
);
-- What schedulers look for: the due schedules, soonest first.
CREATE INDEX readpast_schedules_due ON readpast_schedules (next_fire_at) WHERE next_fire_at IS NOT NULL;

-- ---------------------------------------------------------------------------
-- The state machine as server-side functions, so that a claim, an enqueue or a
-- batch of finishes is one round trip and one short transaction.
--
-- Lock order. Every function that waits for a row lock takes locks in this order,
-- each kind sorted by key, so two transactions never wait on each other in a
-- cycle:
--   schedule row -> queue row (capped claims only) -> chain rows -> task rows
--   -> group rows -> throughput rows -> count rows, then inserts nobody waits for.
-- * Claimers never wait for task or group rows (SKIP LOCKED), only for a capped
--   queue's row, before they hold anything else; so a claimer holding rows is
--   never waiting, and whoever waits for its rows waits at most one claim.
-- * Apart from claims, pending rows of a chain are changed only by the holder of
--   the chain row (refresh, failure policy, cancel, retry).
-- * Enqueue creates missing queue and group rows before it locks its chains:
--   INSERT .. ON CONFLICT DO NOTHING locks no existing row and waits only for
--   another transaction inserting the same new name, which holds nothing that
--   anyone else waits for.
-- * A transaction that locks a schedule row (a fire) locks it first, and
--   nothing else locks schedule rows.
-- * Every writer of several task rows locks them in id order.
--
-- Fencing tokens: the attempt number in the high bits and 32 random bits
-- below it, so every claim of a task gets a token no earlier claim of it had.
-- ---------------------------------------------------------------------------

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
-- holds the chain row. Returns the queue of each task it cancels, for the
-- caller's finished counts.
CREATE FUNCTION readpast_chain_failed(p_chain text, p_task_id bigint, p_stage integer, p_state text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce((SELECT continue_on_failure FROM readpast_chains WHERE name = p_chain), false) THEN
        RETURN;
    END IF;
    -- The text is queue.ChainCancelledError. The queue of each task it
    -- cancels is returned, for the caller's finished counts.
    RETURN QUERY
    UPDATE readpast_tasks
       SET state = 'cancelled', chain_cancelled = true, chain_wait = false, finished_at = now(),
           last_error = format('chain %s: task %s at stage %s ended %s', p_chain, p_task_id, p_stage, p_state)
     WHERE chain = p_chain AND state = 'pending' AND stage > p_stage
    RETURNING queue;
END
$$;

-- readpast_count adds n to the finished count of each (queue, state) given
-- (parallel arrays; negative n subtracts), summed per key and written in key
-- order. PL/pgSQL, so its plan is kept.
CREATE FUNCTION readpast_count(p_queues text[], p_states text[], p_n bigint[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO readpast_counts AS c (queue, state, n)
    SELECT x.q, x.s, sum(x.n) FROM unnest(p_queues, p_states, p_n) AS x(q, s, n)
     WHERE x.q IS NOT NULL GROUP BY x.q, x.s HAVING sum(x.n) <> 0 ORDER BY x.q, x.s
    ON CONFLICT (queue, state) DO UPDATE SET n = c.n + excluded.n;
END
$$;

-- readpast_group_admits says whether a group with ready tasks in the queue
-- has a free slot by its committed counter.
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

-- Enqueue: one call writes a batch (parallel arrays, one element per task) and
-- returns the new ids in the order given, each with whether it was a duplicate
-- of an unfinished task with the same unique key (then the existing id). Missing
-- queue, group and chain rows are created with default settings.
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

-- Claim: up to p_limit tasks of the queue, in claim order, within the queue's
-- cap and every group's limit, in one statement when the queue has no group
-- with ready tasks and a free slot (readpast_group_admits); otherwise a plan of
-- ungrouped and grouped candidates. Due delayed tasks are promoted first. The
-- taken tasks are marked running under a new fencing token.
CREATE FUNCTION readpast_claim(p_queue text, p_owner text, p_limit integer, p_lease_us bigint)
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
-- It writes the log rows and the throughput rollups, and with p_count the
-- counts of the tasks that ended for good, after the rollups (the order every
-- finish takes those rows in). It is called only by readpast_end_attempts,
-- under that function's pinned search_path.
--
-- Lock order. Every writer of several task rows locks them in id order
-- ("Lock order" above); the update takes its row locks in the
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
    p_release boolean, p_only bigint[], p_count boolean,
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
BEGIN
    RETURN QUERY
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
        RETURNING 1
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
    ),
    counted AS (
        -- The counts (000005's readpast_count in this statement), rows in
        -- key order; taken after the rollups' rows, which this reads first.
        INSERT INTO readpast_counts AS c (queue, state, n)
        SELECT e.queue, e.state, count(*)
          FROM ended e
         WHERE p_count AND e.state IN ('succeeded', 'failed', 'cancelled') AND (SELECT count(*) FROM rolled) >= 0
         GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (queue, state) DO UPDATE SET n = c.n + excluded.n
    )
    SELECT e.ord, e.id, e.state, e.retry_at, e.queue, e.group_name, e.chain, e.stage FROM ended e;
END
$$;

-- End attempts. A plain batch (no chains, no groups, not a reclaim) is one
-- call of readpast_end_plain, which locks its tasks itself and counts them.
-- Otherwise chains, tasks and groups are locked in the global order first,
-- then readpast_end_plain without the counts, the group and chain rules, and
-- the counts. One row per attempt that ended: its position in the batch
-- (from 1), the task's state and its retry time; an attempt without a row had
-- a lease that was not current.
CREATE FUNCTION readpast_end_attempts(
    p_release boolean, p_reclaim boolean,
    p_ids bigint[], p_tokens bigint[], p_outcomes text[], p_errors text[],
    p_nodes text[], p_workers text[], p_sessions text[],
    p_started timestamptz[], p_finished timestamptz[], p_rows bigint[], p_messages text[])
RETURNS TABLE (out_ord bigint, out_state text, out_retry_at timestamptz)
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

    IF v_chains IS NULL AND NOT v_any_group AND NOT p_reclaim THEN
        RETURN QUERY
        SELECT e.out_ord, e.out_state, e.out_retry_at
          FROM readpast_end_plain(p_release, NULL, true, p_ids, p_tokens, p_outcomes, p_errors,
                                  p_nodes, p_workers, p_sessions, p_started, p_finished, p_rows, p_messages) e;
        RETURN;
    END IF;

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
      FROM readpast_end_plain(p_release, CASE WHEN p_reclaim THEN v_held END, false, p_ids, p_tokens, p_outcomes, p_errors,
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

    RETURN QUERY SELECT * FROM unnest(v_ord, v_state, v_retry);
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
    v_cq text[];
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
        v_cq := ARRAY[t.queue];
        IF v_chain IS NOT NULL THEN
            v_cq := v_cq || ARRAY(SELECT readpast_chain_failed(v_chain, p_id, t.stage, 'cancelled'));
            PERFORM readpast_refresh_chain(v_chain);
        END IF;
        PERFORM readpast_count(v_cq, array_fill('cancelled'::text, ARRAY[cardinality(v_cq)]),
                               array_fill(1::bigint, ARRAY[cardinality(v_cq)]));
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

-- readpast_pin_functions pins the store's entry points to the current schema.
-- Every migration that replaces one of them calls it again: CREATE OR
-- REPLACE drops a function's SET clauses.
CREATE FUNCTION readpast_pin_functions() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
              WHERE p.pronamespace = current_schema()::regnamespace
                AND p.proname IN ('readpast_claim', 'readpast_enqueue', 'readpast_end_attempts',
                                  'readpast_cancel', 'readpast_retry') LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f, current_schema());
    END LOOP;
END
$$;


SELECT readpast_pin_functions();
