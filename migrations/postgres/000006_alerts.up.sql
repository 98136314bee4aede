-- Alerts (docs/ALERTS.md): the outbox of facts alerts are raised for, the
-- deliveries to operators, and the conditions of time-based rules firing now.
--
-- An event is written by the statement that makes its fact (a task that
-- failed for good: the finish's statement, postgres/finish.go), so it exists
-- exactly when the fact does; nodes claim events with a lease (claimed_by,
-- visible_at: hidden until the lease ends), turn them into deliveries and
-- delete them in one transaction.
CREATE TABLE readpast_alert_events (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at            timestamptz NOT NULL DEFAULT now(),
    kind          text NOT NULL,
    task_id       bigint NOT NULL,
    queue         text NOT NULL,
    schedule_name text,
    target        text NOT NULL DEFAULT '',  -- the task's target
    job_name      text,                      -- the job of a step's task
    outcome       text NOT NULL,
    attempts      integer NOT NULL,
    error         text NOT NULL DEFAULT '',
    claimed_by    text,
    visible_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX readpast_alert_events_visible ON readpast_alert_events (visible_at, id);

-- One message to one channel of one operator; alert_key is the alert id the
-- receiver dedupes by. A pending delivery is due at next_at; a claim moves
-- next_at to the end of its lease and counts an attempt, so one node sends it
-- at a time and another takes over when the lease runs out.
CREATE TABLE readpast_alert_deliveries (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    alert_key  text NOT NULL UNIQUE,
    rule_name  text NOT NULL,
    operator   text NOT NULL,
    channel    text NOT NULL,
    kind       text NOT NULL,
    scope      text NOT NULL DEFAULT '',
    subject    text NOT NULL,
    detail     text NOT NULL DEFAULT '',
    n          integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    state      text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending','sent','failed')),
    next_at    timestamptz NOT NULL,
    attempts   integer NOT NULL DEFAULT 0,
    claimed_by text,
    last_error text NOT NULL DEFAULT '',
    ended_at   timestamptz
);
CREATE INDEX readpast_alert_deliveries_due ON readpast_alert_deliveries (next_at, id) WHERE state = 'pending';
CREATE INDEX readpast_alert_deliveries_ended ON readpast_alert_deliveries (ended_at) WHERE state IN ('sent', 'failed');

-- Time-based rules' subjects firing now (a stuck queue, a silent node): a
-- row appears when the condition starts and goes when it recovers, each in
-- the transaction that adds the notification.
CREATE TABLE readpast_alert_conditions (
    alert_key text PRIMARY KEY,
    since     timestamptz NOT NULL DEFAULT now(),
    detail    text NOT NULL DEFAULT ''
);
