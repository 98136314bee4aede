package sqlserver

// The alerts' outbox (docs/ALERTS.md). Events and deliveries are claimed as
// tasks are: the rows to take are read with UPDLOCK, READPAST, ROWLOCK
// (Microsoft, "Table Hints": READPAST skips rows other transactions hold
// locked instead of waiting, UPDLOCK holds what was read until the UPDATE
// takes it, ROWLOCK keeps the locks to rows), and the UPDATE checks the
// claimable predicate again, so a server that ignores hints (Babelfish)
// still never hands one row to two claimers. Each statement touches one
// table; a write of several (WriteAlerts) locks events, then the condition,
// then deliveries, then the audit row, in that order.

// claimAlertEventsBatch leases up to @limit visible events to @node.
var claimAlertEventsBatch = query{
	name: "claim-alert-events",
	text: readCommitted + `SET NOCOUNT ON;
UPDATE dbo.readpast_alert_events WITH (ROWLOCK)
SET claimed_by = @node, visible_at = DATEADD(millisecond, @lease_ms, SYSUTCDATETIME())
OUTPUT inserted.id, inserted.at, inserted.kind, inserted.task_id, inserted.queue,
       inserted.schedule_name, inserted.target, inserted.job_name, inserted.outcome, inserted.attempts, inserted.error
WHERE id IN (
    SELECT TOP (@limit) e.id
    FROM dbo.readpast_alert_events AS e WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE e.visible_at <= SYSUTCDATETIME()
    ORDER BY e.visible_at, e.id)
  AND visible_at <= SYSUTCDATETIME();
`,
	params: []string{"node", "lease_ms", "limit"},
}

// alertTxBegin opens WriteAlerts' transaction: its statements follow in
// round trips of their own, and write() rolls back whatever a failure left.
const alertTxBegin = readCommitted + "SET XACT_ABORT ON;\nBEGIN TRAN;"

// alertTxCommit ends it.
const alertTxCommit = "COMMIT TRAN;"

// consumeAlertEventBatch deletes one event its holder has turned into
// deliveries; 0 rows: @node no longer holds it.
var consumeAlertEventBatch = query{
	name: "consume-alert-event",
	text: readCommitted + `SET NOCOUNT ON;
DELETE FROM dbo.readpast_alert_events WITH (ROWLOCK) WHERE id = @id AND claimed_by = @node;
SELECT @@ROWCOUNT;
`,
	params: []string{"id", "node"},
}

// setAlertConditionBatch starts a condition unless it is firing already.
// UPDLOCK, HOLDLOCK on the key (a key-range lock where the row is absent):
// a second node starting the same condition waits here, then finds the row.
var setAlertConditionBatch = query{
	name: "set-alert-condition",
	text: readCommitted + `SET NOCOUNT ON;
DECLARE @n int = 0;
IF NOT EXISTS (SELECT 1 FROM dbo.readpast_alert_conditions AS c WITH (UPDLOCK, HOLDLOCK) WHERE c.alert_key = @key)
BEGIN
    INSERT INTO dbo.readpast_alert_conditions (alert_key, detail) VALUES (@key, @detail);
    SET @n = 1;
END;
SELECT @n;
`,
	params: []string{"key", "detail"},
}

// clearAlertConditionBatch ends a condition; 0 rows: it was not firing.
var clearAlertConditionBatch = query{
	name: "clear-alert-condition",
	text: readCommitted + `SET NOCOUNT ON;
DELETE FROM dbo.readpast_alert_conditions WITH (ROWLOCK) WHERE alert_key = @key;
SELECT @@ROWCOUNT;
`,
	params: []string{"key"},
}

// addAlertDeliveryBatch merges a delivery into its key's unsent one, or
// inserts it under its key, or (when that key's delivery has started)
// under @late_key. UPDLOCK, HOLDLOCK on the key: a second adder of the same
// key waits for the first to commit instead of inserting beside it.
var addAlertDeliveryBatch = query{
	name: "add-alert-delivery",
	text: readCommitted + `SET NOCOUNT ON;
DECLARE @done int = 0;
IF @once = 0
BEGIN
    UPDATE dbo.readpast_alert_deliveries WITH (UPDLOCK, HOLDLOCK, ROWLOCK)
    SET n = n + @n
    WHERE alert_key = @key AND state = 'pending' AND attempts = 0;
    SET @done = @@ROWCOUNT;
END;
IF @done = 0 AND NOT EXISTS (SELECT 1 FROM dbo.readpast_alert_deliveries AS d WITH (UPDLOCK, HOLDLOCK) WHERE d.alert_key = @key)
BEGIN
    INSERT INTO dbo.readpast_alert_deliveries (alert_key, rule_name, operator, channel, kind, scope, subject, detail, n, next_at)
    VALUES (@key, @rule, @operator, @channel, @kind, @scope, @subject, @detail, @n, COALESCE(@due, SYSUTCDATETIME()));
    SET @done = 1;
END;
IF @done = 0 AND @once = 0 AND @late_key IS NOT NULL
BEGIN
    UPDATE dbo.readpast_alert_deliveries WITH (UPDLOCK, HOLDLOCK, ROWLOCK)
    SET n = n + @n
    WHERE alert_key = @late_key;
    IF @@ROWCOUNT = 0
        INSERT INTO dbo.readpast_alert_deliveries (alert_key, rule_name, operator, channel, kind, scope, subject, detail, n, next_at)
        VALUES (@late_key, @rule, @operator, @channel, @kind, @scope, @subject, @detail, @n, COALESCE(@due, SYSUTCDATETIME()));
END;
`,
	params: []string{"once", "key", "late_key", "rule", "operator", "channel", "kind", "scope", "subject", "detail", "n", "due"},
}

// alertAuditBatch writes the audit row of an operator's alert action.
var alertAuditBatch = query{
	name: "alert-audit",
	text: readCommitted + `SET NOCOUNT ON;
INSERT INTO dbo.readpast_audit (actor, action, target, detail) VALUES (@actor, @action, @target, @detail);
`,
	params: []string{"actor", "action", "target", "detail"},
}

// alertDeliveryColumns are what scanAlertDelivery reads, of alias p: bare
// columns, as Babelfish takes no expression of inserted in an OUTPUT clause.
func alertDeliveryColumns(p string) string {
	return p + `.id, ` + p + `.alert_key, ` + p + `.rule_name, ` + p + `.operator, ` + p + `.channel, ` + p + `.kind, ` +
		p + `.scope, ` + p + `.subject, ` + p + `.detail, ` + p + `.n, ` + p + `.created_at, ` + p + `.state, ` +
		p + `.next_at, ` + p + `.attempts, ` + p + `.claimed_by, ` + p + `.last_error, ` + p + `.ended_at`
}

// claimAlertDeliveriesBatch leases up to @limit due deliveries to @node and
// counts an attempt of each.
var claimAlertDeliveriesBatch = query{
	name: "claim-alert-deliveries",
	text: readCommitted + `SET NOCOUNT ON;
UPDATE dbo.readpast_alert_deliveries WITH (ROWLOCK)
SET claimed_by = @node, next_at = DATEADD(millisecond, @lease_ms, SYSUTCDATETIME()), attempts = attempts + 1
OUTPUT ` + alertDeliveryColumns("inserted") + `
WHERE id IN (
    SELECT TOP (@limit) d.id
    FROM dbo.readpast_alert_deliveries AS d WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE d.state = 'pending' AND d.next_at <= SYSUTCDATETIME()
    ORDER BY d.next_at, d.id)
  AND state = 'pending' AND next_at <= SYSUTCDATETIME();
`,
	params: []string{"node", "lease_ms", "limit"},
}

// endAlertDeliveryBatch records an attempt's end, only for the current
// attempt of its holder; 0 rows: lease lost.
var endAlertDeliveryBatch = query{
	name: "end-alert-delivery",
	text: readCommitted + `SET NOCOUNT ON;
UPDATE dbo.readpast_alert_deliveries WITH (ROWLOCK)
SET state = @state, next_at = COALESCE(@retry_at, SYSUTCDATETIME()), last_error = COALESCE(NULLIF(@error, N''), last_error),
    ended_at = CASE WHEN @state = 'pending' THEN NULL ELSE SYSUTCDATETIME() END
WHERE id = @id AND claimed_by = @node AND attempts = @attempt AND state = 'pending';
SELECT @@ROWCOUNT;
`,
	params: []string{"state", "retry_at", "error", "id", "node", "attempt"},
}

// alertDeliveriesQuery reads one page, newest first: a backward range of
// the clustered key.
var alertDeliveriesQuery = query{
	name: "alert-deliveries",
	text: readCommitted + `SELECT TOP (@limit) ` + alertDeliveryColumns("d") + `
FROM dbo.readpast_alert_deliveries AS d
WHERE d.id < @before AND (@state = '' OR d.state = @state)
ORDER BY d.id DESC;
`,
	params: []string{"limit", "before", "state"},
}

// alertConditionsQuery lists the conditions firing now.
var alertConditionsQuery = query{
	name: "alert-conditions",
	text: readCommitted + `SELECT c.alert_key, c.since, c.detail FROM dbo.readpast_alert_conditions AS c ORDER BY c.alert_key;
`,
}

// purgeAlertsBatch deletes up to @batch ended deliveries and @batch events
// nobody took, older than @cutoff, skipping rows others hold (READPAST).
var purgeAlertsBatch = query{
	name: "purge-alerts",
	text: readCommitted + `SET NOCOUNT ON;
DECLARE @gone bigint;
DELETE FROM dbo.readpast_alert_deliveries WITH (ROWLOCK)
WHERE id IN (
    SELECT TOP (@batch) d.id
    FROM dbo.readpast_alert_deliveries AS d WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE d.state IN ('sent', 'failed') AND d.ended_at < @cutoff
    ORDER BY d.ended_at);
SET @gone = @@ROWCOUNT;
DELETE FROM dbo.readpast_alert_events WITH (ROWLOCK)
WHERE id IN (
    SELECT TOP (@batch) e.id
    FROM dbo.readpast_alert_events AS e WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE e.visible_at < @cutoff
    ORDER BY e.visible_at);
SELECT @gone + @@ROWCOUNT;
`,
	params: []string{"batch", "cutoff"},
}

// oldestPendingQuery reads each unpaused queue's oldest pending task: one
// seek of readpast_tasks_queue_state per queue (CROSS APPLY TOP (1)).
var oldestPendingQuery = query{
	name: "oldest-pending",
	text: readCommitted + `SELECT q.name, t.id, t.available_at, SYSUTCDATETIME()
FROM dbo.readpast_queues AS q
CROSS APPLY (SELECT TOP (1) p.id, p.available_at FROM dbo.readpast_tasks AS p
             WHERE p.queue = q.name AND p.state = 'pending' ORDER BY p.id) AS t
WHERE q.paused = 0
ORDER BY q.name;
`,
}
