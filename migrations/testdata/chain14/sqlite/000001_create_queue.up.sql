-- Times are integer microseconds since the Unix epoch, UTC; booleans are 0/1.

CREATE TABLE readpast_queues (
    name        TEXT PRIMARY KEY,
    workers     INTEGER,                    -- per node; NULL: the node's default
    max_running INTEGER,                    -- cluster-wide; NULL: no limit
    paused      INTEGER NOT NULL DEFAULT 0,
    updated_at  INTEGER NOT NULL,
    updated_by  TEXT NOT NULL DEFAULT ''
);

CREATE TABLE readpast_groups (
    name        TEXT PRIMARY KEY,
    max_running INTEGER NOT NULL DEFAULT 1,
    running     INTEGER NOT NULL DEFAULT 0, -- kept in step with task state changes
    updated_at  INTEGER NOT NULL,
    updated_by  TEXT NOT NULL DEFAULT ''
);

CREATE TABLE readpast_chains (
    name                TEXT PRIMARY KEY,
    continue_on_failure INTEGER NOT NULL DEFAULT 0,
    created_at          INTEGER NOT NULL
);

CREATE TABLE readpast_tasks (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    queue               TEXT NOT NULL,
    body                TEXT NOT NULL,
    priority            INTEGER NOT NULL DEFAULT 100,
    available_at        INTEGER NOT NULL,
    group_name          TEXT,
    chain               TEXT,
    stage               INTEGER NOT NULL DEFAULT 0,
    chain_wait          INTEGER NOT NULL DEFAULT 0, -- 1 while an earlier stage of its chain is unfinished
    chain_cancelled     INTEGER NOT NULL DEFAULT 0, -- 1 when cancelled by the chain failure policy
    continue_on_failure INTEGER NOT NULL DEFAULT 0,
    max_attempts        INTEGER NOT NULL DEFAULT 3,
    retry_base          INTEGER NOT NULL DEFAULT 0, -- attempts made before the last manual retry
    timeout_ms          INTEGER NOT NULL DEFAULT 0,
    transactional       INTEGER NOT NULL DEFAULT 0,
    state               TEXT NOT NULL DEFAULT 'pending'
                        CHECK (state IN ('pending','running','succeeded','failed','cancelled')),
    attempts            INTEGER NOT NULL DEFAULT 0,
    lease_owner         TEXT,
    lease_token         INTEGER,
    lease_expires_at    INTEGER,
    session_id          TEXT,
    cancel_requested    INTEGER NOT NULL DEFAULT 0,
    created_at          INTEGER NOT NULL,
    created_by          TEXT NOT NULL DEFAULT '',
    started_at          INTEGER,
    finished_at         INTEGER,
    finished_by         TEXT,
    last_error          TEXT
);

-- The claim path: only claimable-by-chain pending rows, in claim order.
CREATE INDEX readpast_tasks_claim ON readpast_tasks (queue, priority, available_at, id)
    WHERE state = 'pending' AND chain_wait = 0;
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
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id       INTEGER NOT NULL,
    attempt       INTEGER NOT NULL,
    queue         TEXT NOT NULL,
    node          TEXT NOT NULL DEFAULT '',
    worker        TEXT NOT NULL DEFAULT '',
    session_id    TEXT NOT NULL DEFAULT '',
    started_at    INTEGER NOT NULL,
    finished_at   INTEGER NOT NULL,
    duration_ms   INTEGER NOT NULL,
    outcome       TEXT NOT NULL
                  CHECK (outcome IN ('succeeded','failed','timed_out','cancelled','lost')),
    error         TEXT NOT NULL DEFAULT '',
    rows_affected INTEGER NOT NULL DEFAULT 0,
    messages      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX readpast_attempts_task ON readpast_attempts (task_id, attempt);
CREATE INDEX readpast_attempts_queue ON readpast_attempts (queue, id);
CREATE INDEX readpast_attempts_outcome ON readpast_attempts (outcome, id);
CREATE INDEX readpast_attempts_finished ON readpast_attempts (finished_at);

CREATE TABLE readpast_nodes (
    id           TEXT PRIMARY KEY,
    hostname     TEXT NOT NULL DEFAULT '',
    pid          INTEGER NOT NULL DEFAULT 0,
    version      TEXT NOT NULL DEFAULT '',
    started_at   INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    stopped_at   INTEGER,
    info         TEXT NOT NULL DEFAULT '{}' -- JSON: workers and what each runs
);

-- Who changed what (SPEC §7: every mutation records who did it).
CREATE TABLE readpast_audit (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    at     INTEGER NOT NULL,
    actor  TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX readpast_audit_at ON readpast_audit (at);
