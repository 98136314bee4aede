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
