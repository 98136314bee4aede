package target

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"readpast/internal/sqlrun"
)

// Activity is what one session on a target is doing now, as the server's
// own views say: PostgreSQL's pg_stat_activity and pg_blocking_pids, SQL
// Server's sys.dm_exec_requests. The targets page and a running task's page
// show it: a DBA's first question about a slow task is what it waits on.
type Activity struct {
	SessionID string `json:"session_id"`
	// State: PostgreSQL's state (active, idle in transaction, …); SQL
	// Server's request status (running, suspended, runnable, …).
	State string `json:"state"`
	// Command: SQL Server's command (SELECT, UPDATE, WAITFOR, …); "" on
	// PostgreSQL, whose statement is in Statement.
	Command string `json:"command,omitempty"`
	// Wait: PostgreSQL's wait_event_type:wait_event (Lock:transactionid);
	// SQL Server's wait_type (LCK_M_X); "" when it waits on nothing.
	Wait string `json:"wait,omitempty"`
	// WaitMS: how long the current wait has lasted (SQL Server's
	// wait_time; PostgreSQL's time since the state changed, while waiting).
	WaitMS int64 `json:"wait_ms"`
	// BlockedBy: the sessions holding what it waits for.
	BlockedBy []string `json:"blocked_by"`
	// ElapsedMS: how long its current statement has run.
	ElapsedMS int64 `json:"elapsed_ms"`
	// CPUMS and Reads: SQL Server's cpu_time and logical_reads of the
	// request; 0 on PostgreSQL, which keeps no such counters per session.
	CPUMS int64 `json:"cpu_ms"`
	Reads int64 `json:"reads"`
	// Statement: the start of the text it runs (at most 300 characters).
	Statement string `json:"statement"`
	// Application: the session's application name ("ReadPast worker …"
	// for ReadPast's own, a DBA's tool for a blocker).
	Application string `json:"application"`
}

// ActivityReport is the activity of some sessions of one target, with the
// sessions that block them.
type ActivityReport struct {
	Sessions []Activity `json:"sessions"`
	// Missing says, as a sentence, what the login lacks to see the
	// sessions ("" when nothing is missing).
	Missing string `json:"missing,omitempty"`
	// Unsupported: the dialect has no view of other sessions (SQLite).
	Unsupported bool `json:"unsupported,omitempty"`
}

// activityReader is a target that can read its sessions' activity.
type activityReader interface {
	activity(ctx context.Context, ids []int64) (ActivityReport, error)
}

// maxStatement bounds the statement text read per session, in characters.
const maxStatement = "300"

// sessionIDs parses ids to numbers: only numbers reach the query text.
func sessionIDs(ids []string) []int64 {
	var out []int64
	seen := map[int64]bool{}
	for _, s := range ids {
		n, err := strconv.ParseInt(s, 10, 64)
		if err == nil && n > 0 && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// activityPG reads the sessions and those that block them: one statement,
// pg_stat_activity joined to pg_blocking_pids. The login sees its own
// sessions' statements; another role's show "<insufficient privilege>"
// unless it has pg_read_all_stats.
const activityPG = `WITH wanted AS (SELECT unnest($1::int[]) AS pid),
blockers AS (SELECT DISTINCT unnest(pg_blocking_pids(w.pid)) AS pid FROM wanted w)
SELECT a.pid, coalesce(a.state, ''), coalesce(a.wait_event_type || ':' || a.wait_event, ''),
       CASE WHEN a.wait_event IS NOT NULL THEN (extract(epoch FROM now() - a.state_change) * 1000)::bigint ELSE 0 END,
       pg_blocking_pids(a.pid), coalesce((extract(epoch FROM now() - a.query_start) * 1000)::bigint, 0),
       left(coalesce(a.query, ''), ` + maxStatement + `), coalesce(a.application_name, '')
  FROM pg_stat_activity a
 WHERE a.pid IN (SELECT pid FROM wanted UNION SELECT pid FROM blockers)
 ORDER BY a.pid`

func (t *postgresTarget) activity(ctx context.Context, ids []int64) (ActivityReport, error) {
	var rep ActivityReport
	pids := make([]int32, len(ids))
	for i, id := range ids {
		pids[i] = int32(id)
	}
	rows, err := t.pool.Query(ctx, activityPG, pids)
	if err != nil {
		return rep, fmt.Errorf("reading pg_stat_activity: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			a       Activity
			pid     int32
			blocked []int32
		)
		if err := rows.Scan(&pid, &a.State, &a.Wait, &a.WaitMS, &blocked, &a.ElapsedMS, &a.Statement, &a.Application); err != nil {
			return rep, fmt.Errorf("reading pg_stat_activity: %w", err)
		}
		a.SessionID = strconv.Itoa(int(pid))
		a.BlockedBy = []string{}
		for _, b := range blocked {
			a.BlockedBy = append(a.BlockedBy, strconv.Itoa(int(b)))
		}
		rep.Sessions = append(rep.Sessions, a)
	}
	return rep, rows.Err()
}

// activityMSSQLPerm asks whether the login may see every session's
// requests: without VIEW SERVER STATE, sys.dm_exec_requests shows a login
// only its own current session ("sys.dm_exec_requests", Permissions,
// Microsoft Learn), so the others' would look idle.
//
// SQL Server 2022 also grants it as VIEW SERVER PERFORMANCE STATE; an older
// server does not know that name, and HAS_PERMS_BY_NAME answers NULL for it.
const activityMSSQLPerm = `SELECT CASE WHEN HAS_PERMS_BY_NAME(NULL, NULL, 'VIEW SERVER STATE') = 1
            OR HAS_PERMS_BY_NAME(NULL, NULL, 'VIEW SERVER PERFORMANCE STATE') = 1 THEN 1 ELSE 0 END`

// activityMSSQL reads the requests of the sessions and of those that block
// them (one level: the head of a chain shows as a blocker with its own
// request, or none when it idles in a transaction). The ids are numbers
// formatted by the caller, never text from elsewhere.
const activityMSSQL = `SELECT CAST(s.session_id AS int), COALESCE(r.status, s.status), COALESCE(r.command, N''),
       COALESCE(r.wait_type, N''), CAST(COALESCE(r.wait_time, 0) AS bigint),
       CAST(COALESCE(r.blocking_session_id, 0) AS int), CAST(COALESCE(r.total_elapsed_time, 0) AS bigint),
       CAST(COALESCE(r.cpu_time, 0) AS bigint), CAST(COALESCE(r.logical_reads, 0) AS bigint),
       COALESCE(LEFT(q.text, ` + maxStatement + `), N''), COALESCE(s.program_name, N'')
FROM sys.dm_exec_sessions AS s
LEFT JOIN sys.dm_exec_requests AS r ON r.session_id = s.session_id
OUTER APPLY sys.dm_exec_sql_text(r.sql_handle) AS q
WHERE s.session_id IN (%[1]s)
   OR s.session_id IN (SELECT x.blocking_session_id FROM sys.dm_exec_requests AS x
                        WHERE x.session_id IN (%[1]s) AND x.blocking_session_id <> 0)
ORDER BY s.session_id`

func (t *sqlServerTarget) activity(ctx context.Context, ids []int64) (ActivityReport, error) {
	var rep ActivityReport
	var allowed int
	if err := t.db.QueryRowContext(ctx, activityMSSQLPerm).Scan(&allowed); err != nil {
		return rep, fmt.Errorf("checking VIEW SERVER STATE: %w", sqlrun.DescribeMSSQL(err))
	}
	if allowed != 1 {
		rep.Missing = "the login has no VIEW SERVER STATE permission, so SQL Server shows it no other session's requests: GRANT VIEW SERVER STATE TO the login ReadPast uses for this target (VIEW SERVER PERFORMANCE STATE on SQL Server 2022) to see what its tasks wait on"
		return rep, nil
	}
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = strconv.FormatInt(id, 10)
	}
	rows, err := t.db.QueryContext(ctx, fmt.Sprintf(activityMSSQL, strings.Join(list, ",")))
	if err != nil && strings.Contains(err.Error(), "does not exist") {
		// Babelfish for PostgreSQL speaks TDS but has no such view.
		rep.Missing = "this server does not provide sys.dm_exec_requests or sys.dm_exec_sessions, so what its sessions wait on cannot be shown"
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("reading sys.dm_exec_requests: %w", sqlrun.DescribeMSSQL(err))
	}
	defer rows.Close()
	for rows.Next() {
		var (
			a          Activity
			sid, block int32
		)
		if err := rows.Scan(&sid, &a.State, &a.Command, &a.Wait, &a.WaitMS, &block, &a.ElapsedMS, &a.CPUMS, &a.Reads, &a.Statement, &a.Application); err != nil {
			return rep, fmt.Errorf("reading sys.dm_exec_requests: %w", sqlrun.DescribeMSSQL(err))
		}
		a.SessionID = strconv.Itoa(int(sid))
		a.BlockedBy = []string{}
		if block != 0 {
			a.BlockedBy = append(a.BlockedBy, strconv.Itoa(int(block)))
		}
		a.Command, a.Wait = strings.TrimSpace(a.Command), strings.TrimSpace(a.Wait)
		rep.Sessions = append(rep.Sessions, a)
	}
	return rep, rows.Err()
}

// activityCache keeps each target's latest report for a second, so pages
// refreshed by many viewers cost the target one query a second at most.
type activityCache struct {
	mu   sync.Mutex
	byID map[string]cachedActivity
}

type cachedActivity struct {
	at  time.Time
	rep ActivityReport
	err error
}

// ActivityEvery bounds how often one target's activity is read.
const ActivityEvery = time.Second

// Activity reads what the sessions ids of the named target do now, with
// the sessions that block them, at most once a second per target and set
// of sessions. SQLite has no such view: the report says so.
func (s *Set) Activity(ctx context.Context, name string, ids []string) (ActivityReport, error) {
	nums := sessionIDs(ids)
	if len(nums) == 0 {
		return ActivityReport{}, nil
	}
	key := name + "|" + fmt.Sprint(nums)
	s.activity.mu.Lock()
	if c, ok := s.activity.byID[key]; ok && time.Since(c.at) < ActivityEvery {
		s.activity.mu.Unlock()
		return c.rep, c.err
	}
	s.activity.mu.Unlock()
	rep, err := s.readActivity(ctx, name, nums)
	if err != nil {
		err = errors.New(s.Redact(err.Error()))
	}
	s.activity.mu.Lock()
	defer s.activity.mu.Unlock()
	if s.activity.byID == nil || len(s.activity.byID) > 1000 {
		s.activity.byID = map[string]cachedActivity{}
	}
	s.activity.byID[key] = cachedActivity{at: time.Now(), rep: rep, err: err}
	return rep, err
}

func (s *Set) readActivity(ctx context.Context, name string, ids []int64) (ActivityReport, error) {
	t, err := s.Get(ctx, name)
	if err != nil {
		return ActivityReport{}, err
	}
	r, ok := t.(activityReader)
	if !ok {
		return ActivityReport{Unsupported: true}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	return r.activity(ctx, ids)
}
