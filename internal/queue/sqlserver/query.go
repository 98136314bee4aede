package sqlserver

import (
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/golang-sql/civil"
	mssql "github.com/microsoft/go-mssqldb"

	"readpast/internal/queue"
)

// query is one T-SQL batch and the @parameters it reads. The offline test
// checks params against the batch text and against the arguments the Go code
// builds for it, so a typo fails `go test` without a server.
type query struct {
	name   string
	text   string
	params []string
}

// readCommitted opens every store batch: the batch runs at READ COMMITTED
// whatever level its session was left at. SQL Server keeps a session's
// isolation level until it is set again: sp_reset_connection, which the
// driver runs when a pooled session is reused, does not reset it (Microsoft:
// "SET TRANSACTION ISOLATION LEVEL"; the pool keeps what a transactional body
// set). At SERIALIZABLE, REPEATABLE READ's range locks would be held by every
// unhinted read, and at SERIALIZABLE, SNAPSHOT or READ UNCOMMITTED a READPAST
// hint fails with error 650 (READPAST is allowed only under READ COMMITTED or
// REPEATABLE READ, "Table hints"). Set inside a batch sent with parameters
// (sp_executesql), the level lasts until the batch ends, as in a procedure;
// set in a plain batch it stays on the session, where READ COMMITTED is what
// every batch wants anyway. With READ_COMMITTED_SNAPSHOT ON, READ COMMITTED
// is its row-versioning form, as the hints in doc.go expect.
const readCommitted = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED;\n"

// taskColumnNames are the readpast_tasks columns a queue.Task is read from, in
// the order scanTask expects them.
var taskColumnNames = []string{
	"id", "queue", "body", "priority", "available_at", "group_name", "chain", "stage",
	"chain_wait", "continue_on_failure", "max_attempts", "timeout_ms", "transactional",
	"state", "attempts", "lease_owner", "lease_token", "lease_expires_at", "session_id",
	"cancel_requested", "created_at", "created_by", "started_at", "finished_at", "last_error",
	"unique_key", "schedule_name", "fire_at", "target", "name",
}

// taskTableColumns declares a table variable's columns for the task columns of
// taskColumnNames, in that order, typed as readpast_tasks has them: @out of
// the claim.
const taskTableColumns = `    id                  bigint        NOT NULL PRIMARY KEY,
    queue               nvarchar(64)  NOT NULL,
    body                nvarchar(max) NOT NULL,
    priority            smallint      NOT NULL,
    available_at        datetime2(6)  NOT NULL,
    group_name          nvarchar(128) NULL,
    chain               nvarchar(128) NULL,
    stage               int           NOT NULL,
    chain_wait          bit           NOT NULL,
    continue_on_failure bit           NOT NULL,
    max_attempts        int           NOT NULL,
    timeout_ms          bigint        NOT NULL,
    transactional       bit           NOT NULL,
    state               varchar(10)   NOT NULL,
    attempts            int           NOT NULL,
    lease_owner         nvarchar(128) NULL,
    lease_token         bigint        NULL,
    lease_expires_at    datetime2(6)  NULL,
    session_id          nvarchar(64)  NULL,
    cancel_requested    bit           NOT NULL,
    created_at          datetime2(6)  NOT NULL,
    created_by          nvarchar(128) NOT NULL,
    started_at          datetime2(6)  NULL,
    finished_at         datetime2(6)  NULL,
    last_error          nvarchar(max) NULL,
    unique_key          nvarchar(128) NULL,
    schedule_name       nvarchar(64)  NULL,
    fire_at             datetime2(6)  NULL,
    target              nvarchar(64)  NOT NULL,
    name                nvarchar(400) NULL`

// columns lists the task columns qualified by alias: "t.id, t.queue, ...".
func columns(alias string) string {
	parts := make([]string, len(taskColumnNames))
	for i, c := range taskColumnNames {
		parts[i] = alias + "." + c
	}
	return strings.Join(parts, ", ")
}

// columnList lists the task columns unqualified: "id, queue, ...".
func columnList() string { return strings.Join(taskColumnNames, ", ") }

// rowScanner is *sql.Row or *sql.Rows.
type rowScanner interface{ Scan(dest ...any) error }

// scanTask reads the columns of taskColumnNames, plus any extra destinations
// that follow them in the select list.
func scanTask(r rowScanner, extra ...any) (*queue.Task, error) {
	var (
		t                                        queue.Task
		group, chain, owner, session, lastErr    sql.NullString
		uniqueKey, scheduleName, name            sql.NullString
		fireAt                                   sql.NullTime
		token                                    sql.NullInt64
		leaseExpires, started, finished          sql.NullTime
		priority, stage, maxAttempts, attempts   int64
		timeoutMS                                int64
		state                                    string
		chainWait, cof, transactional, cancelReq bool
		availableAt, createdAt                   time.Time
	)
	dest := []any{
		&t.ID, &t.Queue, &t.Body, &priority, &availableAt, &group, &chain, &stage,
		&chainWait, &cof, &maxAttempts, &timeoutMS, &transactional,
		&state, &attempts, &owner, &token, &leaseExpires, &session,
		&cancelReq, &createdAt, &t.CreatedBy, &started, &finished, &lastErr,
		&uniqueKey, &scheduleName, &fireAt, &t.Target, &name,
	}
	if err := r.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	t.Name = name.String
	t.Priority = int(priority)
	t.AvailableAt = availableAt.UTC()
	t.Group = group.String
	t.Chain = chain.String
	t.Stage = int(stage)
	t.ChainWait = chainWait
	t.ContinueOnFailure = cof
	t.MaxAttempts = int(maxAttempts)
	t.Timeout = time.Duration(timeoutMS) * time.Millisecond
	t.Transactional = transactional
	t.State = queue.State(state)
	t.Attempts = int(attempts)
	t.LeaseOwner = owner.String
	t.LeaseToken = token.Int64
	t.LeaseExpiresAt = utc(leaseExpires)
	t.SessionID = session.String
	t.CancelRequested = cancelReq
	t.CreatedAt = createdAt.UTC()
	t.StartedAt = utc(started)
	t.FinishedAt = utc(finished)
	t.LastError = lastErr.String
	t.UniqueKey = uniqueKey.String
	t.Schedule = scheduleName.String
	t.FireAt = utc(fireAt)
	return &t, nil
}

// utc returns a nullable time in UTC, or the zero time for NULL.
func utc(t sql.NullTime) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

// Parameters are always typed, NULLs included: an untyped nil goes as TDS
// type 0x1F (NULLTYPE), which SQL Server accepts but Microsoft's drivers never
// send, and which Babelfish refuses. A typed NULL also lets the server pick
// the same plan for a NULL and a value.

// datetime2 encodes t as a datetime2 parameter in UTC, or a datetime2 NULL for
// the zero time. A plain time.Time would go as datetimeoffset, and converting
// that to a datetime2 column keeps the clock time of its offset, not UTC.
func datetime2(t time.Time) any {
	if t.IsZero() {
		return mssql.NullDateTime{}
	}
	return civil.DateTimeOf(t.UTC())
}

// nullString is an nvarchar NULL for "" and the string otherwise.
func nullString(s string) any {
	if s == "" {
		return sql.NullString{}
	}
	return s
}

// varchar sends s as varchar, to match varchar columns (state, outcome) without
// an implicit conversion of the column that would stop an index seek.
func varchar(s string) any { return mssql.VarChar(s) }

// maxText sends a possibly long string as nvarchar(max).
func maxText(s string) any { return mssql.NVarCharMax(s) }

// nullMaxText is an nvarchar NULL for "" and s as nvarchar(max) otherwise.
func nullMaxText(s string) any {
	if s == "" {
		return sql.NullString{}
	}
	return mssql.NVarCharMax(s)
}

// bit is a bool as 0/1 for T-SQL bit parameters.
func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}

// DSNWithDatabase returns dsn pointing at database name, in either DSN form
// go-mssqldb reads: a sqlserver:// URL or an ADO key=value string (where the
// last value of a key wins). Test databases and selftest's scratch database
// are reached this way.
func DSNWithDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(strings.ToLower(dsn), "sqlserver://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("sqlserver: parsing the DSN: %w", err)
		}
		q := u.Query()
		q.Set("database", name)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return strings.TrimRight(dsn, "; ") + ";database=" + name, nil
}

// ClaimBatch returns the production claim batch and its arguments for p, so
// that selftest can ask the server for the batch's plan (SET SHOWPLAN_XML)
// without running it.
func ClaimBatch(p queue.ClaimParams) (string, []any, error) {
	if err := checkClaim(p); err != nil {
		return "", nil, err
	}
	token, err := newLeaseToken()
	if err != nil {
		return "", nil, err
	}
	return claimBatch.text, claimArgs(p, token), nil
}

// namedArgs binds q's parameters, in its order, from values by name: one
// operation picks among queries whose parameters differ.
func namedArgs(q query, values map[string]any) []any {
	args := make([]any, len(q.params))
	for i, name := range q.params {
		args[i] = sql.Named(name, values[name])
	}
	return args
}
