-- ReadPast's schema on SQLite, whole (docs/QUEUE.md describes the model).
-- It replaces the pre-release chain of migrations 1-14; a file made by that
-- chain is refused by migrate with what to do (migrations/legacy.go).
--
-- Times are integer microseconds since the Unix epoch, UTC; booleans are 0/1.
-- SQLite keeps the queue's logic in Go (internal/queue/sqlite): one writer
-- connection makes every write a serial transaction, so nothing here locks.
--
-- The cost rule of SPEC §9: nothing a claim, a finish or a page reads may grow
-- with history. Each index below says which read it serves.

-- Queue settings, shared by every node (SPEC §5).
CREATE TABLE readpast_queues (
    name        TEXT PRIMARY KEY,
    workers     INTEGER,                    -- per node; NULL: the node's default
    max_running INTEGER,                    -- cluster-wide; NULL: no limit
    paused      INTEGER NOT NULL DEFAULT 0,
    updated_at  INTEGER NOT NULL,
    updated_by  TEXT NOT NULL DEFAULT ''
);

-- Concurrency groups: at most max_running of a group's tasks run at once.
CREATE TABLE readpast_groups (
    name        TEXT PRIMARY KEY,
    max_running INTEGER NOT NULL DEFAULT 1,
    running     INTEGER NOT NULL DEFAULT 0, -- kept in step with task state changes
    updated_at  INTEGER NOT NULL,
    updated_by  TEXT NOT NULL DEFAULT ''
);

-- Chains: ordered stages; the failure policy is the chain's.
CREATE TABLE readpast_chains (
    name                TEXT PRIMARY KEY,
    continue_on_failure INTEGER NOT NULL DEFAULT 0,
    created_at          INTEGER NOT NULL
);

-- The tasks (SPEC §3). The last four columns came after the others in the
-- pre-release chain and stay last, so a file made by either has the same
-- column order.
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
    last_error          TEXT,
    delayed             INTEGER NOT NULL DEFAULT 0, -- 1 while pending with available_at ahead
    unique_key          TEXT,
    schedule_name       TEXT,                       -- the schedule that made it
    fire_at             INTEGER                     -- and the fire time it is the run of
);

-- The claim stays flat behind any backlog (docs/QUEUE.md, "Claiming behind a
-- backlog"): a delayed task is out of the claim's indexes until due, and
-- ungrouped and grouped ready tasks have indexes of their own. Ungrouped ones
-- are split by transactional as well: SQLite runs transactional tasks one at a
-- time (they hold its one writer), so while one runs the claim reads only the
-- others.
CREATE INDEX readpast_tasks_ready ON readpast_tasks (queue, transactional, priority, available_at, id)
    WHERE state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NULL;
CREATE INDEX readpast_tasks_ready_grouped ON readpast_tasks (queue, group_name, priority, available_at, id)
    WHERE state = 'pending' AND chain_wait = 0 AND delayed = 0 AND group_name IS NOT NULL;
-- Delayed tasks, soonest first: what the claim moves into the ready indexes.
CREATE INDEX readpast_tasks_delayed ON readpast_tasks (queue, available_at)
    WHERE state = 'pending' AND delayed = 1;
-- Running rows: lease reclaim and per-queue running counts.
CREATE INDEX readpast_tasks_running ON readpast_tasks (lease_expires_at)
    WHERE state = 'running';
-- Retention finds finished tasks by index.
CREATE INDEX readpast_tasks_finished ON readpast_tasks (finished_at)
    WHERE state IN ('succeeded', 'failed', 'cancelled');
-- Dashboard lists (newest first) by state, queue, or both.
CREATE INDEX readpast_tasks_state ON readpast_tasks (state, id);
CREATE INDEX readpast_tasks_queue ON readpast_tasks (queue, id);
CREATE INDEX readpast_tasks_queue_state ON readpast_tasks (queue, state, id);
-- A group's or a schedule's tasks of one state are one range in id order: a
-- page of one state reads its range, a page of every state merges the newest
-- rows of one range per state (sqlite/read.go), so neither reads the history
-- of other states (a schedule that fires every minute makes 43,000 tasks a
-- month).
CREATE INDEX readpast_tasks_group_state ON readpast_tasks (group_name, state, id) WHERE group_name IS NOT NULL;
CREATE INDEX readpast_tasks_schedule_state ON readpast_tasks (schedule_name, state, id) WHERE schedule_name IS NOT NULL;
-- Chain order: a chain's unfinished earlier stages.
CREATE INDEX readpast_tasks_chain ON readpast_tasks (chain, stage, id) WHERE chain IS NOT NULL;
-- Unique keys on enqueue (docs/QUEUE.md, "Unique keys"): a partial unique index
-- over unfinished keyed tasks arbitrates; a claim keeps a task inside it, with
-- the same key, so it never conflicts with anything.
CREATE UNIQUE INDEX readpast_tasks_unique ON readpast_tasks (queue, unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('pending', 'running');

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
-- A task's attempts.
CREATE INDEX readpast_attempts_task ON readpast_attempts (task_id, attempt);
-- Pages by outcome, and by queue and outcome: each queue's attempts of each
-- outcome are one range in id order, and a page of one queue merges the newest
-- rows of one range per outcome (sqlite/logs.go); SQLite does not intersect
-- two indexes, so (queue, id) beside (outcome, id) read whole histories.
CREATE INDEX readpast_attempts_outcome ON readpast_attempts (outcome, id);
CREATE INDEX readpast_attempts_list ON readpast_attempts (queue, outcome, id);
-- Retention and time ranges.
CREATE INDEX readpast_attempts_finished ON readpast_attempts (finished_at);

-- Nodes register and heartbeat (SPEC §5); retention deletes the long gone.
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

-- Costs that do not grow with history (docs/QUEUE.md, "Counts and the
-- throughput series"): finished counts per queue and state, and attempts per
-- minute and hour, kept by the transactions that change them.
CREATE TABLE readpast_counts (
    queue TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('succeeded', 'failed', 'cancelled')),
    n     INTEGER NOT NULL,
    PRIMARY KEY (queue, state)
);
CREATE TABLE readpast_throughput (
    span    TEXT NOT NULL CHECK (span IN ('minute', 'hour')),
    bucket  INTEGER NOT NULL,
    queue   TEXT NOT NULL,
    outcome TEXT NOT NULL,
    n       INTEGER NOT NULL,
    busy_ms INTEGER NOT NULL,
    PRIMARY KEY (span, bucket, queue, outcome)
);

-- Schedules (docs/SCHEDULES.md): a cron expression in a time zone and the
-- template of the task each fire creates.
--
-- Exactly once without a leader: a fire is one transaction that moves the
-- schedule's row from the version its scheduler read to the next one and
-- creates the task; a second scheduler with the same plan finds the version
-- gone and writes nothing. The row keeps only the latest fire and run, so
-- nothing here grows with history.
CREATE TABLE readpast_schedules (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    name              TEXT NOT NULL UNIQUE,
    cron              TEXT NOT NULL,
    time_zone         TEXT NOT NULL DEFAULT 'UTC',
    queue             TEXT NOT NULL,
    body              TEXT NOT NULL,
    priority          INTEGER NOT NULL DEFAULT 100,
    group_name        TEXT,
    max_attempts      INTEGER NOT NULL DEFAULT 3,
    timeout_ms        INTEGER NOT NULL DEFAULT 0,
    transactional     INTEGER NOT NULL DEFAULT 0,
    paused            INTEGER NOT NULL DEFAULT 0,
    overlap           TEXT NOT NULL DEFAULT 'skip' CHECK (overlap IN ('skip','allow')),
    misfire           TEXT NOT NULL DEFAULT 'run_once' CHECK (misfire IN ('run_once','skip')),
    version           INTEGER NOT NULL DEFAULT 1,   -- changes with every change and every fire
    next_fire_at      INTEGER,                      -- NULL while paused
    last_fire_at      INTEGER,                      -- the latest fire time handled
    last_fire_outcome TEXT CHECK (last_fire_outcome IN ('enqueued','skipped_overlap','skipped_misfire')),
    last_fire_missed  INTEGER NOT NULL DEFAULT 0,   -- earlier fire times it stood for or skipped
    last_task_id      INTEGER,                      -- the latest run (a fire or a run now)
    created_at        INTEGER NOT NULL,
    created_by        TEXT NOT NULL DEFAULT '',
    updated_at        INTEGER NOT NULL,
    updated_by        TEXT NOT NULL DEFAULT ''
);
-- What schedulers look for: the due schedules, soonest first.
CREATE INDEX readpast_schedules_due ON readpast_schedules (next_fire_at) WHERE next_fire_at IS NOT NULL;
