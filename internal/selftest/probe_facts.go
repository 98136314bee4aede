package selftest

import (
	"context"
	"database/sql"
	"readpast/internal/dialect"
	"strings"
)

// probeFacts reports what about the server decides how ReadPast behaves on
// it. Most are facts (INFO); a few are verdicts: a setting under which a
// guarantee cannot hold is a FAIL with what to change.
func probeFacts(ctx context.Context, e *env) []Check {
	var facts []fact
	switch e.dialect {
	case dialect.SQLServer:
		facts = sqlServerFacts(e.sc)
	case dialect.Postgres:
		facts = postgresFacts
	default:
		facts = sqliteFacts
	}
	out := make([]Check, 0, len(facts))
	for _, f := range facts {
		out = append(out, timed(Check{Name: f.name, Guarantee: f.why, Status: Info}, func(c *Check) {
			var values []string
			rows, err := e.sc.db.QueryContext(ctx, f.query)
			if err == nil {
				values, err = readStrings(rows)
			}
			switch {
			case err != nil:
				c.Status, c.Evidence = Skip, "not readable with this login: "+err.Error()
			case f.judge != nil:
				c.Evidence = strings.Join(values, "; ")
				if problem := f.judge(values); problem != "" {
					c.Status, c.Evidence = Fail, c.Evidence+": "+problem
				} else {
					c.Status = Pass
				}
			default:
				c.Evidence = strings.Join(values, "; ")
			}
		}))
	}
	return out
}

// fact is one thing to read from the server: a query whose rows' columns are
// joined into the evidence, and optionally a judge that says what is wrong.
type fact struct {
	name, why, query string
	judge            func(values []string) string
}

// sqlServerFacts reads the DSN's own database where it matters (its
// compatibility level and RCSI decide how ReadPast runs there), and the
// scratch database for what the probes left.
func sqlServerFacts(sc *scratch) []fact {
	db := "N'" + strings.ReplaceAll(sc.storeDB, "'", "''") + "'"
	return []fact{
		{name: "version", why: "SQL Server 2016 or later (OPENJSON, DATEDIFF_BIG)",
			query: "SELECT CAST(SERVERPROPERTY('ProductVersion') AS nvarchar(64)), CAST(SERVERPROPERTY('Edition') AS nvarchar(128));"},
		{name: "compatibility level", why: "OPENJSON runs in the store database (level 130 or higher on SQL Server)",
			query: "SELECT name + N' at level ' + CAST(compatibility_level AS nvarchar(8)) FROM sys.databases WHERE name = " + db + ";",
			judge: func([]string) string {
				if !sc.openJSON {
					return "OPENJSON does not run there: run ALTER DATABASE CURRENT SET COMPATIBILITY_LEVEL = 130 (or higher) in the store database"
				}
				return ""
			}},
		{name: "read committed snapshot", why: "RCSI on: dashboard reads never wait for writers (recommended, docs/SQLSERVER.md)",
			query: "SELECT name + CASE is_read_committed_snapshot_on WHEN 1 THEN N': RCSI on' ELSE N': RCSI off (recommended on)' END FROM sys.databases WHERE name = " + db + ";"},
		{name: "ghost records", why: "ghost records left at the head of the claim's indexes slow every claim (docs/SQLSERVER.md); read in the store database",
			query: ghostRecordsQuery(sc.storeDB)},
		{name: "ending lost sessions", why: "KILL needs ALTER ANY CONNECTION: with it, the reclaim of a frozen or cut-off node's lease ends the body it left running (docs/WORKERS.md, \"Ending a lost attempt's session\"); read for this login, which is the targets' when they log in alike",
			query: "SELECT CASE HAS_PERMS_BY_NAME(NULL, NULL, N'ALTER ANY CONNECTION') WHEN 1 THEN N'ALTER ANY CONNECTION granted: the reclaim ends a lost attempt''s session (KILL)' " +
				"ELSE N'no ALTER ANY CONNECTION: a frozen or cut-off node''s body runs on after its lease is reclaimed, beside the next attempt, until it ends; grant it to the login the nodes use on their targets' END;"},
		{name: "permissions", why: "what the login may do (README: running needs SELECT, INSERT, UPDATE, DELETE on the store's tables)",
			query: "SELECT permission_name FROM fn_my_permissions(NULL, 'DATABASE') WHERE permission_name IN (N'CREATE TABLE', N'ALTER', N'SELECT', N'INSERT', N'UPDATE', N'DELETE', N'SHOWPLAN', N'VIEW DATABASE STATE') ORDER BY permission_name;"},
	}
}

var postgresFacts = []fact{
	{name: "version", why: "PostgreSQL 13 or later", query: "SELECT version()"},
	{name: "isolation", why: "READ COMMITTED by default: the claim's SKIP LOCKED is written for it",
		query: "SELECT current_setting('default_transaction_isolation')",
		judge: func(v []string) string {
			if len(v) == 0 || v[0] != "read committed" {
				return "set default_transaction_isolation = 'read committed' for the ReadPast login (ALTER ROLE … SET)"
			}
			return ""
		}},
	{name: "timeouts", why: "server timeouts that can cut a task body or a claim",
		query: "SELECT 'statement_timeout=' || current_setting('statement_timeout') || ', lock_timeout=' || current_setting('lock_timeout') || ', idle_in_transaction_session_timeout=' || current_setting('idle_in_transaction_session_timeout')"},
	{name: "connections", why: "each running task holds a target connection; the store pool adds its own",
		query: "SELECT 'max_connections=' || current_setting('max_connections') || ', in use ' || (SELECT count(*) FROM pg_stat_activity)"},
	{name: "permissions", why: "what the login may do (README: CREATE on the schema to migrate)",
		query: "SELECT current_user || ': CREATE on database ' || has_database_privilege(current_database(), 'CREATE') || ', on schema public ' || has_schema_privilege('public', 'CREATE')"},
}

var sqliteFacts = []fact{
	{name: "version", why: "SQLite as embedded in the binary", query: "SELECT sqlite_version()"},
	{name: "journal", why: "WAL: readers never wait for the writer", query: "PRAGMA journal_mode"},
}

// readStrings reads every row's columns as text.
func readStrings(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		parts := make([]string, 0, len(cols))
		for _, v := range vals {
			if v.Valid {
				parts = append(parts, v.String)
			}
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out, rows.Err()
}

// ghostRecordsQuery counts the ghost and live records of the claim's indexes
// in the store database (not the scratch, which the probes just filled), or
// says there are no ReadPast tables there. The object id is checked first:
// sys.dm_db_index_physical_stats given a NULL object reads every table.
func ghostRecordsQuery(storeDB string) string {
	lit := "N'" + strings.ReplaceAll(storeDB, "'", "''") + "'"
	table := "N'" + strings.ReplaceAll(quoteName(storeDB), "'", "''") + ".dbo.readpast_tasks'"
	return `DECLARE @object int = OBJECT_ID(` + table + `);
IF @object IS NULL
    SELECT ` + lit + ` + N': no ReadPast tables';
ELSE
    SELECT i.name + N': ' + CAST(SUM(s.ghost_record_count) AS nvarchar(20)) + N' ghost, ' + CAST(SUM(s.record_count) AS nvarchar(20)) + N' live records'
    FROM sys.dm_db_index_physical_stats(DB_ID(` + lit + `), @object, NULL, NULL, 'SAMPLED') AS s
    JOIN ` + quoteName(storeDB) + `.sys.indexes AS i ON i.object_id = s.object_id AND i.index_id = s.index_id
    WHERE s.index_level = 0 AND i.name LIKE N'readpast_tasks_%'
    GROUP BY i.name ORDER BY i.name;`
}
