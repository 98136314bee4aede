-- Alerts (docs/ALERTS.md): the outbox of facts alerts are raised for, the
-- deliveries to operators, and the conditions of time-based rules firing now.
--
-- An event is written by the transaction that makes its fact (a task that
-- failed for good), so it exists exactly when the fact does; nodes claim
-- events with a lease (claimed_by, visible_at: hidden until the lease ends),
-- turn them into deliveries and delete them in one transaction.
CREATE TABLE readpast_alert_events (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    at            INTEGER NOT NULL,
    kind          TEXT NOT NULL,
    task_id       INTEGER NOT NULL,
    queue         TEXT NOT NULL,
    schedule_name TEXT,
    target        TEXT NOT NULL DEFAULT '',  -- the task's target
    job_name      TEXT,                      -- the job of a step's task
    outcome       TEXT NOT NULL,
    attempts      INTEGER NOT NULL,
    error         TEXT NOT NULL DEFAULT '',
    claimed_by    TEXT,
    visible_at    INTEGER NOT NULL
);
CREATE INDEX readpast_alert_events_visible ON readpast_alert_events (visible_at, id);

-- One message to one channel of one operator; alert_key is the alert id the
-- receiver dedupes by. A pending delivery is due at next_at; a claim moves
-- next_at to the end of its lease and counts an attempt, so one node sends it
-- at a time and another takes over when the lease runs out.
CREATE TABLE readpast_alert_deliveries (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    alert_key  TEXT NOT NULL UNIQUE,
    rule_name  TEXT NOT NULL,
    operator   TEXT NOT NULL,
    channel    TEXT NOT NULL,
    kind       TEXT NOT NULL,
    scope      TEXT NOT NULL DEFAULT '',
    subject    TEXT NOT NULL,
    detail     TEXT NOT NULL DEFAULT '',
    n          INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    state      TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending','sent','failed')),
    next_at    INTEGER NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    claimed_by TEXT,
    last_error TEXT NOT NULL DEFAULT '',
    ended_at   INTEGER
);
CREATE INDEX readpast_alert_deliveries_due ON readpast_alert_deliveries (next_at, id) WHERE state = 'pending';
CREATE INDEX readpast_alert_deliveries_ended ON readpast_alert_deliveries (ended_at) WHERE state IN ('sent', 'failed');

-- Time-based rules' subjects firing now (a stuck queue, a silent node): a
-- row appears when the condition starts and goes when it recovers, each in
-- the transaction that adds the notification.
CREATE TABLE readpast_alert_conditions (
    alert_key TEXT PRIMARY KEY,
    since     INTEGER NOT NULL,
    detail    TEXT NOT NULL DEFAULT ''
);
