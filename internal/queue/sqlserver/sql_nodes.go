package sqlserver

// Node registrations (queue.NodeStore). Each node writes only its own row.

// registerNodeBatch inserts or replaces a node's row. UPDATE first WITH
// (UPDLOCK, HOLDLOCK), then INSERT when nothing was there: the key-range lock
// makes two processes registering the same id at once queue up instead of one
// failing on the primary key (the usual T-SQL upsert, without MERGE).
var registerNodeBatch = query{
	name: "register-node",
	text: readCommitted + `SET NOCOUNT ON;
SET XACT_ABORT ON;
BEGIN TRAN;

UPDATE n
SET n.hostname     = @hostname,
    n.pid          = @pid,
    n.version      = @version,
    n.started_at   = SYSUTCDATETIME(),
    n.heartbeat_at = SYSUTCDATETIME(),
    n.stopped_at   = NULL,
    n.info         = @info
FROM dbo.readpast_nodes AS n WITH (UPDLOCK, HOLDLOCK)
WHERE n.id = @id;

IF @@ROWCOUNT = 0
BEGIN
    INSERT INTO dbo.readpast_nodes (id, hostname, pid, version, info)
    VALUES (@id, @hostname, @pid, @version, @info);
END;

COMMIT TRAN;
`,
	params: []string{"id", "hostname", "pid", "version", "info"},
}

// heartbeatNodeBatch marks a node alive now; the result is the rows changed
// (0: the node never registered).
var heartbeatNodeBatch = query{
	name: "heartbeat-node",
	text: readCommitted + `SET NOCOUNT ON;
UPDATE dbo.readpast_nodes
SET heartbeat_at = SYSUTCDATETIME(),
    info         = @info,
    stopped_at   = NULL
WHERE id = @id;
SELECT @@ROWCOUNT;
`,
	params: []string{"id", "info"},
}

// stopNodeBatch marks a node stopped (graceful shutdown).
var stopNodeBatch = query{
	name: "stop-node",
	text: readCommitted + `SET NOCOUNT ON;
UPDATE dbo.readpast_nodes
SET stopped_at   = SYSUTCDATETIME(),
    heartbeat_at = SYSUTCDATETIME()
WHERE id = @id;
`,
	params: []string{"id"},
}

// purgeNodesBatch deletes the rows of nodes whose last heartbeat (or stop)
// is before @cutoff; the result is how many. The table holds a row per node
// id, a handful: the scan is of those.
var purgeNodesBatch = query{
	name: "purge-nodes",
	text: readCommitted + `SET NOCOUNT ON;
DELETE FROM dbo.readpast_nodes WHERE heartbeat_at < @cutoff;
SELECT @@ROWCOUNT;
`,
	params: []string{"cutoff"},
}

// nodesQuery lists nodes, newest heartbeat first; gone is decided on the
// database clock, so nodes with skewed clocks agree.
var nodesQuery = query{
	name: "nodes",
	text: readCommitted + `SELECT n.id, n.hostname, n.pid, n.version, n.started_at, n.heartbeat_at, n.stopped_at, n.info,
       CAST(CASE WHEN n.stopped_at IS NOT NULL
                   OR DATEDIFF_BIG(millisecond, n.heartbeat_at, SYSUTCDATETIME()) > @gone_ms
                 THEN 1 ELSE 0 END AS bit) AS gone
FROM dbo.readpast_nodes AS n
ORDER BY n.heartbeat_at DESC, n.id;
`,
	params: []string{"gone_ms"},
}
